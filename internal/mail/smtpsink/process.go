package smtpsink

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/config"
)

var (
	buildMu  sync.Mutex
	binaries = map[string]string{}
)

// binary builds cmd/smtpsink once per test process.
func binary(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := binaries["smtpsink"]; ok {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	dir, err := os.MkdirTemp("", "smtpsink-bin-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "smtpsink")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/smtpsink")
	cmd.Dir = filepath.Dir(file)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build smtpsink: %v\n%s", err, b)
	}
	binaries["smtpsink"] = out
	return out
}

// Process is a running smtpsink.
type Process struct {
	Addr string // host:port
	Dir  string // where the mails are
	t    testing.TB
	cmd  *exec.Cmd
}

// SMTP is the smtp section of a latchkey config that mails p: no TLS, and
// a quick retry so that a test waits little for a mail sent again.
func (p *Process) SMTP() config.SMTP {
	host, port, _ := strings.Cut(p.Addr, ":")
	n, _ := strconv.Atoi(port)
	return config.SMTP{Host: host, Port: n, From: "noreply@latchkey.test", TLS: "none",
		RetryAfter: config.Duration(50 * time.Millisecond)}
}

// Start runs smtpsink as a separate process on a free port, storing mails
// in a fresh folder, until the test ends.
func Start(t testing.TB) *Process {
	t.Helper()
	p := &Process{Dir: t.TempDir(), t: t}
	p.start("127.0.0.1:0")
	t.Cleanup(p.Stop)
	return p
}

func (p *Process) start(listen string) {
	p.t.Helper()
	cmd := exec.Command(binary(p.t), "-listen", listen, "-dir", p.Dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		p.t.Fatalf("smtpsink did not start: %v", err)
	}
	p.Addr = strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	p.cmd = cmd
}

// Stop kills the server (a mail server that went away).
func (p *Process) Stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// Restart starts the server again on the same address. The port was free
// a moment ago; another process taking it meanwhile fails the test.
func (p *Process) Restart() {
	p.t.Helper()
	p.Stop()
	p.start(p.Addr)
}

// Mails returns the mails received so far.
func (p *Process) Mails() []Mail {
	p.t.Helper()
	ms, err := Mails(p.Dir)
	if err != nil {
		p.t.Fatal(err)
	}
	return ms
}

// WaitFor polls until n mails satisfy match, or fails the test at deadline.
func (p *Process) WaitFor(n int, within time.Duration, match func(Mail) bool) []Mail {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var got []Mail
		for _, m := range p.Mails() {
			if match == nil || match(m) {
				got = append(got, m)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("smtpsink: %d matching mails after %v, want %d", len(got), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
