package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The systemd unit passes systemd-analyze verify without a warning (an
// unknown or misspelt hardening key is only a warning there, so any output
// fails the test).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is not installed and CI=true (scripts/test-deps installs systemd)")
		}
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile("../../packaging/latchkey.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart's binary exists: point it at the test build.
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/latchkey", build(t))
	path := filepath.Join(t.TempDir(), "latchkey.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// podmanConf is podman's and buildah's configuration for the container
// test: storage in the test's folder (vfs: no overlay mounts to clean up),
// and what a root container without systemd needs. runc, because crun
// refuses a hybrid cgroup v1/v2 host ("cgroups in hybrid mode not
// supported"); cgroupfs and a file event log, without systemd; ulimits
// at most the host's, because podman's defaults (nofile 1048576) need
// CAP_SYS_RESOURCE to set ("setrlimit RLIMIT_NOFILE: Operation not
// permitted"), which a container host may not grant.
const podmanConf = `[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "%s"
`

// libpodTmp is podman's folder of sockets, short enough for a socket path
// (108 bytes) with a container id (64) in it: t.TempDir's names are long.
func libpodTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "lkpod")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// containerTools finds podman, buildah and runc (scripts/test-deps installs
// them); without them it skips, except under CI=true, where it fails.
func containerTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"podman", "buildah", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed and CI=true (scripts/test-deps installs it)", tool)
			}
			t.Skipf("%s is not installed (scripts/test-deps installs it)", tool)
		}
	}
}

// TestContainerImage builds the image with scripts/build-image (buildah,
// from scratch: no registry, no base image), checks its configuration,
// starts it with podman and the config file mounted (SQLite in /data),
// gets a token through the published port, and checks that latchkey runs
// as user 65532, that the health check passes and that a stop drains and
// exits 0.
func TestContainerImage(t *testing.T) {
	containerTools(t)
	dir := t.TempDir()
	storage := filepath.Join(dir, "storage.conf")
	conf := filepath.Join(dir, "containers.conf")
	files := map[string]string{
		storage: fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "graph"), filepath.Join(dir, "run")),
		conf:    fmt.Sprintf(podmanConf, libpodTmp(t)),
		// The container's user reads it.
		filepath.Join(dir, "latchkey.yaml"): crashConfig,
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "CONTAINERS_STORAGE_CONF="+storage, "CONTAINERS_CONF="+conf)
	// podman runs podman with a bounded time; it returns stdout.
	podman := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "podman", args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return stdout.String(), fmt.Errorf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String(), nil
	}

	image := "localhost/latchkey:test"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	buildImage := exec.CommandContext(ctx, "../../scripts/build-image", image)
	buildImage.Env = env
	if out, err := buildImage.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-image: %v\n%s", err, out)
	}
	out, err := podman("image", "inspect", image)
	if err != nil {
		t.Fatal(err)
	}
	var inspected []struct {
		Config struct {
			User       string
			Entrypoint []string
			Cmd        []string
			Volumes    map[string]struct{}
		}
		HealthCheck struct{ Test []string }
	}
	if err := json.Unmarshal([]byte(out), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v %s", err, out)
	}
	img := inspected[0]
	_, dataVolume := img.Config.Volumes["/data"]
	if img.Config.User != "65532:65532" || !slices.Equal(img.Config.Entrypoint, []string{"/latchkey"}) ||
		!slices.Equal(img.Config.Cmd, []string{"serve"}) || !dataVolume ||
		!slices.Equal(img.HealthCheck.Test, []string{"CMD", "/latchkey", "healthcheck"}) {
		t.Errorf("image config %+v, health check %v; want user 65532:65532, entrypoint /latchkey serve, volume /data, "+
			"health check /latchkey healthcheck", img.Config, img.HealthCheck.Test)
	}

	// slirp4netns publishes the port from a process on the host's loopback:
	// the host's network sees only 127.0.0.1, no bridge and no firewall rules.
	name := fmt.Sprintf("latchkey-test-%d", os.Getpid())
	addr := freePort(t)
	port := strings.TrimPrefix(addr, "127.0.0.1:")
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := podman("logs", name)
			t.Logf("container logs:\n%s", logs)
		}
		_, _ = podman("rm", "--force", "--volumes", name)
	})
	if _, err := podman("run", "--detach", "--name", name,
		"--network", "slirp4netns:port_handler=slirp4netns", "--publish", "127.0.0.1:"+port+":8080",
		"--volume", filepath.Join(dir, "latchkey.yaml")+":/etc/latchkey.yaml:ro",
		"--env", "LATCHKEY_SHUTDOWN_DRAIN_DELAY=1s",
		image, "serve", "--config", "/etc/latchkey.yaml"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("podman cannot run a container here: %v", err)
	}
	waitReady(t, addr, nil)
	tokenStatus(t, addr, 200) // a client-credentials token, stored in /data

	out, err = podman("top", name, "user", "huser")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !slices.Equal(strings.Fields(lines[1]), []string{"65532", "65532"}) {
		t.Errorf("podman top user huser:\n%s\nwant latchkey alone, as 65532 in the container and on the host", out)
	}
	// Without systemd podman sets no timer for the health check, so run it.
	if _, err := podman("healthcheck", "run", name); err != nil {
		t.Errorf("health check: %v", err)
	}
	if out, err := podman("inspect", "--format", "{{.State.Health.Status}}", name); err != nil || strings.TrimSpace(out) != "healthy" {
		t.Errorf("health status %q %v, want healthy", out, err)
	}
	if _, err := podman("stop", "--time", "30", name); err != nil {
		t.Fatal(err)
	}
	if out, err := podman("inspect", "--format", "{{.State.ExitCode}}", name); err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("exit code after podman stop: %q %v, want 0 (SIGTERM drains)", out, err)
	}
	if _, err := podman("rm", "--volumes", name); err != nil {
		t.Error(err)
	}
}
