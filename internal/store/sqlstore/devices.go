package sqlstore

import (
	"context"

	"github.com/latchkey/latchkey/internal/store"
)

const deviceColumns = `hash, user_code, client_id, scopes, idp, poll_interval, last_polled_at, status, subject,
	auth_level, amr, approved_by, created_at, expires_at`

func scanDevice(s scanner) (store.DeviceCode, error) {
	var d store.DeviceCode
	var scopes, amr string
	var polled, created, expires int64
	if err := s.Scan(&d.Hash, &d.UserCode, &d.ClientID, &scopes, &d.IDP, &d.Interval, &polled, &d.Status, &d.Subject,
		&d.AuthLevel, &amr, &d.ApprovedBy, &created, &expires); err != nil {
		return d, err
	}
	var err error
	if d.Scopes, err = fromList(scopes); err != nil {
		return d, err
	}
	d.AMR, err = fromList(amr)
	d.LastPolledAt, d.CreatedAt, d.ExpiresAt = fromMicros(polled), fromMicros(created), fromMicros(expires)
	return d, err
}

// CreateDeviceCode inserts a device authorization.
func (db *DB) CreateDeviceCode(ctx context.Context, d store.DeviceCode) error {
	_, err := db.exec(ctx, `INSERT INTO device_codes (`+deviceColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.Hash, d.UserCode, d.ClientID, list(d.Scopes), d.IDP, d.Interval, micros(d.LastPolledAt), d.Status, d.Subject,
		d.AuthLevel, list(d.AMR), d.ApprovedBy, micros(d.CreatedAt), micros(d.ExpiresAt))
	return err
}

// GetDeviceCode returns one by device code hash. A device's poll reads it
// outside a transaction, so concurrent polls share round trips
// (queryRowShared).
func (db *DB) GetDeviceCode(ctx context.Context, hash []byte) (store.DeviceCode, error) {
	d, err := scanDevice(db.queryRowShared(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE hash = ?`, hash))
	return d, db.scanErr(err)
}

// GetDeviceCodeByUserCode returns one by user code.
func (db *DB) GetDeviceCodeByUserCode(ctx context.Context, userCode string) (store.DeviceCode, error) {
	d, err := scanDevice(db.queryRow(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE user_code = ?`, userCode))
	return d, db.scanErr(err)
}

// UpdateDeviceCode is a locked read-modify-write.
func (db *DB) UpdateDeviceCode(ctx context.Context, hash []byte, fn func(store.DeviceCode) (store.DeviceCode, error)) (store.DeviceCode, error) {
	var out store.DeviceCode
	err := db.Tx(ctx, func(st store.Store) error {
		tx := st.(*DB)
		old, err := scanDevice(tx.queryRowWrite(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE hash = ?`+tx.d.ForUpdate, hash))
		if err != nil {
			return tx.scanErr(err)
		}
		d, err := fn(old)
		if err != nil {
			out = old
			return err
		}
		out = d
		_, err = tx.exec(ctx, `UPDATE device_codes SET scopes = ?, poll_interval = ?, last_polled_at = ?, status = ?,
			subject = ?, auth_level = ?, amr = ?, approved_by = ? WHERE hash = ?`,
			list(d.Scopes), d.Interval, micros(d.LastPolledAt), d.Status, d.Subject, d.AuthLevel, list(d.AMR), d.ApprovedBy, hash)
		return err
	})
	return out, err
}

// SetDevicePoll is a compare-and-set of the poll state: the row is written
// only as old left it.
func (db *DB) SetDevicePoll(ctx context.Context, hash []byte, old, d store.DeviceCode) (bool, error) {
	n, err := db.execShared(ctx, `UPDATE device_codes SET poll_interval = ?, last_polled_at = ?
		WHERE hash = ? AND status = ? AND poll_interval = ? AND last_polled_at = ?`,
		d.Interval, micros(d.LastPolledAt), hash, store.DevicePending, old.Interval, micros(old.LastPolledAt))
	return n == 1, err
}
