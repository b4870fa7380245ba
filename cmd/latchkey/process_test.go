package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store/postgres/pgtest"
)

// The helpers every test of the real binary shares: build it once, run it
// in a clean environment, start a server and wait for its readiness, stop it.

// binary is the latchkey binary built once for these tests.
var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// TestMain removes the binary built for the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "latchkey-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "latchkey")
		args := []string{"build", "-race", "-o", binary, "."}
		if os.Getenv("LATCHKEY_TEST_NORACE") != "" { // for throughput figures (docs/PERFORMANCE.md)
			args = slices.Delete(args, 1, 2)
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// command runs the binary in a fresh working folder with a clean LATCHKEY_* environment.
func command(t *testing.T, env []string, args ...string) *exec.Cmd {
	return commandOf(t, build(t), env, args...)
}

// commandOf is command for another latchkey binary (the previous release's).
func commandOf(t *testing.T, bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LATCHKEY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// No load balancer in front of most tests: stop at once on SIGTERM
	// (a test's env, appended after, may set a delay; the last one counts).
	cmd.Env = append(cmd.Env, "LATCHKEY_SHUTDOWN_DRAIN_DELAY=0s")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// startServing starts cmd (a `latchkey serve` listening on addr), kills it
// when the test ends if it still runs, and returns once it is ready.
func startServing(t *testing.T, cmd *exec.Cmd, addr string) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitReady(t, addr, cmd)
}

// waitReady polls addr's readiness until it answers 200. After 60 s it
// kills cmd (nil for a container, which is no child process) and fails.
func waitReady(t *testing.T, addr string, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/health/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if cmd == nil {
		t.Fatalf("%s not ready within 60 s", addr)
	}
	_ = cmd.Process.Kill()
	t.Fatalf("%s not ready within 60 s%s", addr, stderrOf(cmd))
}

// serveSetup is what a test needs to run `latchkey serve` on one backend:
// the config file in a fresh folder, a free address, the database (the
// value of LATCHKEY_DATABASE) and the environment that names them.
type serveSetup struct {
	cfgPath, addr, database string
	env                     []string
}

// setupServe writes config and sets up a server on backend: "sqlite", a
// file in the folder (beside the server key), or "postgres", a throwaway
// database. It logs at logLevel.
func setupServe(t *testing.T, backend, config, logLevel string) serveSetup {
	t.Helper()
	dir := t.TempDir()
	s := serveSetup{cfgPath: filepath.Join(dir, "latchkey.yaml"), addr: freePort(t),
		database: "sqlite:" + filepath.Join(dir, "data", "latchkey.db")}
	if err := os.WriteFile(s.cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if backend == "postgres" {
		s.database = pgtest.NewDatabase(t)
	}
	s.env = []string{"LATCHKEY_LISTEN=" + s.addr, "LATCHKEY_DATABASE=" + s.database,
		"LATCHKEY_SECRET_KEY_FILE=" + filepath.Join(dir, "data", "secret.key"), "LATCHKEY_LOG_LEVEL=" + logLevel}
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v%s", err, stderrOf(cmd))
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("did not exit within 30 s of SIGTERM%s", stderrOf(cmd))
	}
}

// stderrOf is what cmd wrote to stderr when the test kept it, for a
// failure's message.
func stderrOf(cmd *exec.Cmd) string {
	if s, ok := cmd.Stderr.(*syncBuffer); ok {
		return "; stderr:\n" + s.String()
	}
	return ""
}

// runWithin runs cmd to its end, killing it after d.
func runWithin(cmd *exec.Cmd, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
