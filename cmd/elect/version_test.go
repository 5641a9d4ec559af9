//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestVersionFormat prints build info with and without a VCS stamp: every
// field on its own line, "unknown" for what the build did not record.
func TestVersionFormat(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{{
		name: "stamped",
		bi: &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/leaderkit/elector/cmd/elect", Version: "v0.1.1-0.20261130081947-f61169866e93+dirty"},
			Settings: []debug.BuildSetting{
				{Key: "-trimpath", Value: "true"},
				{Key: "vcs.revision", Value: "f61169866e93efb730bd8b0c6cb48c758cde1f68"},
				{Key: "vcs.time", Value: "2026-11-30T08:19:47Z"},
				{Key: "vcs.modified", Value: "true"},
			},
		},
		want: "elect v0.1.1-0.20261130081947-f61169866e93+dirty\n" +
			"module:   github.com/leaderkit/elector/cmd/elect\n" +
			"revision: f61169866e93efb730bd8b0c6cb48c758cde1f68 (modified)\n" +
			"time:     2026-11-30T08:19:47Z\n" +
			"go:       go1.26.8 " + platform + "\n",
	}, {
		name: "installed from the module proxy",
		bi: &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/leaderkit/elector/cmd/elect", Version: "v0.1.0"},
		},
		want: "elect v0.1.0\n" +
			"module:   github.com/leaderkit/elector/cmd/elect\n" +
			"revision: unknown\n" +
			"time:     unknown\n" +
			"go:       go1.26.8 " + platform + "\n",
	}, {
		name: "no build info",
		want: "elect unknown\n" +
			"module:   unknown\n" +
			"revision: unknown\n" +
			"time:     unknown\n" +
			"go:       " + runtime.Version() + " " + platform + "\n",
	}} {
		var b strings.Builder
		readVersion(tc.bi).write(&b)
		if got := b.String(); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// TestVersion checks that elect version prints what the toolchain stamped.
// It copies the repository's root module and the modules elect replaces it
// and the kube driver with into a fresh git repository (the go command
// stamps nothing in a git worktree, whose .git is a file, nor outside a
// checkout), builds elect there as go build does by default in its module
// (with -trimpath, so that the build cache serves the copy's packages,
// which it keys by directory otherwise), clean and then with an
// uncommitted file, and compares elect version and elect --version with the
// repository's revision, commit time and state; then it compares the test's
// own elect binary with what go version -m reads from it. The copy and the
// builds are buildStamped's, which TestMain starts in the background.
func TestVersion(t *testing.T) {
	t.Parallel()
	<-stamped.done
	if stamped.err != nil {
		t.Fatal(stamped.err)
	}
	for _, b := range stamped.bins {
		want := map[string]string{"revision": stamped.rev, "time": stamped.ctime}
		if b.modified {
			want["revision"] += " (modified)"
		}
		version := checkVersion(t, b.path, want)
		// The version is the pseudo-version of the untagged revision (a
		// tag of elect's module would be cmd/elect/vX.Y.Z).
		if !strings.HasPrefix(version, "v0.0.0-") || !strings.Contains(version, stamped.rev[:12]) || strings.HasSuffix(version, "+dirty") != b.modified {
			t.Errorf("modified=%v: version %q; want v0.0.0-<time>-%s, +dirty when modified", b.modified, version, stamped.rev[:12])
		}
	}

	// The binary the other tests run: whatever it was built with, elect
	// version shows what go version -m reads from it.
	out, err := exec.Command("go", "version", "-m", electBin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	want := map[string]string{"revision": "unknown", "time": "unknown"}
	var version string
	modified := false
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			version = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			want["revision"] = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.time="):
			want["time"] = strings.TrimPrefix(f[1], "vcs.time=")
		case len(f) == 2 && f[0] == "build" && f[1] == "vcs.modified=true":
			modified = true // built from a checkout with uncommitted changes
		}
	}
	if modified {
		want["revision"] += " (modified)"
	}
	if got := checkVersion(t, electBin, want); got != version {
		t.Errorf("elect version: version %q; go version -m says %q", got, version)
	}

	code, combined := runElect(t, nil, "version", "extra")
	if code != exitUsage || !strings.Contains(combined, `version: unexpected argument "extra"`) {
		t.Errorf("elect version extra: got exit %d and\n%s\nwant exit 2 and the argument named", code, combined)
	}
}

// checkVersion runs bin version and bin --version, checks that both print
// the same, with the module, this Go version and the fields in want, and
// returns the version on the first line.
func checkVersion(t *testing.T, bin string, want map[string]string) string {
	t.Helper()
	want["module"] = "github.com/leaderkit/elector/cmd/elect"
	want["go"] = runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	var outputs []string
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("elect %s: %v", arg, err)
		}
		outputs = append(outputs, string(out))
	}
	if outputs[0] != outputs[1] {
		t.Errorf("elect version and elect --version differ:\n%s\n%s", outputs[0], outputs[1])
	}
	first, rest, _ := strings.Cut(outputs[0], "\n")
	version, ok := strings.CutPrefix(first, "elect ")
	if !ok || version == "" || version == "unknown" {
		t.Errorf("elect version: first line %q; want \"elect <module version>\"", first)
	}
	got := map[string]string{}
	for line := range strings.Lines(rest) {
		k, v, _ := strings.Cut(line, ":")
		got[k] = strings.TrimSpace(v)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("elect version: %s is %q; want %q\n%s", k, got[k], w, outputs[0])
		}
	}
	return version
}

func init() { backgroundBuilds = append(backgroundBuilds, buildStamped) }

// stamped is what buildStamped made for TestVersion; done is closed when
// it has ended, err says why it could not.
var stamped = struct {
	done       chan struct{}
	rev, ctime string // the copy's revision and commit time (RFC 3339, UTC)
	bins       []stampedBin
	err        error
}{done: make(chan struct{})}

// stampedBin is an elect built in the copy; modified: with an uncommitted
// file in it.
type stampedBin struct {
	path     string
	modified bool
}

// buildStamped copies the repository (copyModule) into a git repository of
// its own beside electBin, commits it, and builds elect there twice as
// TestVersion describes: clean, then with an uncommitted file.
func buildStamped() {
	defer close(stamped.done)
	stamped.err = func() error {
		repo := filepath.Join(filepath.Dir(electBin), "stamped")
		if err := copyModule(repo); err != nil {
			return fmt.Errorf("copying the module: %v", err)
		}
		for _, args := range [][]string{
			{"init", "-q"},
			{"add", "-A"},
			{"-c", "user.name=elect test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "snapshot"},
		} {
			if _, err := git(repo, args...); err != nil {
				return err
			}
		}
		rev, err := git(repo, "rev-parse", "HEAD")
		if err != nil {
			return err
		}
		ct, err := git(repo, "log", "-1", "--format=%ct")
		if err != nil {
			return err
		}
		secs, err := strconv.ParseInt(ct, 10, 64)
		if err != nil {
			return err
		}
		stamped.rev, stamped.ctime = rev, time.Unix(secs, 0).UTC().Format(time.RFC3339)
		for _, modified := range []bool{false, true} {
			if modified {
				if err := os.WriteFile(filepath.Join(repo, "uncommitted"), nil, 0o644); err != nil {
					return err
				}
			}
			bin := filepath.Join(filepath.Dir(electBin), "elect-stamped-"+strconv.FormatBool(modified))
			build := exec.Command("go", "build", "-buildvcs=true", "-trimpath", "-o", bin, ".")
			build.Dir = filepath.Join(repo, "cmd", "elect")
			build.Env = gitlessEnv()
			if out, err := build.CombinedOutput(); err != nil {
				return fmt.Errorf("go build -buildvcs=true: %v\n%s", err, out)
			}
			stamped.bins = append(stamped.bins, stampedBin{bin, modified})
		}
		return nil
	}()
}

// copyModule copies the source of the repository (two levels up, without
// .git) into the directory dst: the root module, elect's own
// module and the kube driver's, which elect's go.mod replaces with the
// directories beside it; the other nested modules are left out.
func copyModule(dst string) error {
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case d.Name() == ".git" && d.IsDir():
			return filepath.SkipDir
		case d.Name() == ".git":
			return nil // a worktree's link to its repository
		case d.IsDir():
			_, err := os.Stat(filepath.Join(path, "go.mod"))
			if nested := rel != "." && err == nil; nested && rel != filepath.Join("cmd", "elect") && rel != "kube" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case !d.Type().IsRegular():
			return nil
		case rel == "go.work":
			// The copy holds only these modules of the workspace.
			return os.WriteFile(filepath.Join(dst, rel), []byte("go 1.26.0\n\nuse (\n\t.\n\t./cmd/elect\n\t./kube\n)\n"), 0o644)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}

// git runs git on the repository in dir, and on no other, and returns its
// trimmed output. GIT_DIR and GIT_WORK_TREE pin the repository (without them
// a git command in a directory without .git works on the first repository
// above it); the user's and the system's git configuration are ignored.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitlessEnv(),
		"GIT_DIR="+filepath.Join(dir, ".git"), "GIT_WORK_TREE="+dir,
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// gitlessEnv is the environment without GIT_* variables, which could point
// git, or the go command's VCS stamping, at another repository.
func gitlessEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}
