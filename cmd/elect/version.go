//go:build unix

package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
)

// buildVersion is what elect version prints, read from the build info the
// Go toolchain embeds in the binary.
type buildVersion struct {
	module   string // path of the main module
	version  string // its version: a tag, a pseudo-version, or "(devel)"
	revision string // vcs.revision; "" when the build was not stamped
	time     string // vcs.time, the revision's commit time (RFC 3339)
	modified string // vcs.modified: "true" when the tree had uncommitted changes
	goVer    string // the Go toolchain that built the binary
	platform string // GOOS/GOARCH
}

// readVersion extracts a buildVersion from bi; bi may be nil (a binary
// built without module support).
func readVersion(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{goVer: runtime.Version(), platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	v.module, v.version, v.goVer = bi.Main.Path, bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value
		}
	}
	return v
}

// write prints v, one "key: value" line each; a value the build did not
// record is "unknown". A binary installed with go install module@version
// has a version but no VCS stamp: the module proxy serves no repository.
func (v buildVersion) write(w io.Writer) {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	rev := orUnknown(v.revision)
	if modified, _ := strconv.ParseBool(v.modified); modified {
		rev += " (modified)"
	}
	fmt.Fprintf(w, "elect %s\n", orUnknown(v.version))
	fmt.Fprintf(w, "module:   %s\n", orUnknown(v.module))
	fmt.Fprintf(w, "revision: %s\n", rev)
	fmt.Fprintf(w, "time:     %s\n", orUnknown(v.time))
	fmt.Fprintf(w, "go:       %s %s\n", orUnknown(v.goVer), v.platform)
}

// versionMain is elect version (and elect --version).
func versionMain(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return exitf(exitUsage, "version: unexpected argument %q", args[0])
	}
	bi, _ := debug.ReadBuildInfo()
	readVersion(bi).write(stdout)
	return nil
}
