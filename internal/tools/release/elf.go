package main

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
)

// machine is the ELF machine of a GOARCH we release, false for another.
func machine(goarch string) (elf.Machine, bool) {
	switch goarch {
	case "amd64":
		return elf.EM_X86_64, true
	case "arm64":
		return elf.EM_AARCH64, true
	}
	return 0, false
}

// checkELF checks that the file at path is a static 64-bit little-endian
// ELF executable for linux/arch, built with CGO_ENABLED=0: what a release
// archive promises (it runs on any Linux of that architecture, whatever its
// libc).
func checkELF(path, arch string) error {
	want, ok := machine(arch)
	if !ok {
		return fmt.Errorf("%s: GOARCH %q is not one we release", path, arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
	}
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		bad("%v %v, want a 64-bit little-endian ELF", f.Class, f.Data)
	}
	if f.Machine != want {
		bad("machine %v, want %v (%s)", f.Machine, want, arch)
	}
	if f.Type != elf.ET_EXEC {
		bad("type %v, want a static executable (ET_EXEC)", f.Type)
	}
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			bad("has a program interpreter (dynamically linked)")
		case elf.PT_DYNAMIC:
			bad("has a dynamic section (dynamically linked)")
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		bad("needs shared libraries %v", libs)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: build information: %w", path, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for _, kv := range [][2]string{{"GOOS", "linux"}, {"GOARCH", arch}, {"CGO_ENABLED", "0"}, {"-trimpath", "true"}} {
		if settings[kv[0]] != kv[1] {
			bad("build setting %s=%q, want %q", kv[0], settings[kv[0]], kv[1])
		}
	}
	return errors.Join(errs...)
}
