package node

import (
	"fmt"
	"os"

	"github.com/nri-grpc/nri-grpc/config"
)

// prepareDir creates dir when it is missing (with mode, or 0755) and, when
// mode or group is set, applies them to the directory, existing or not.
func prepareDir(dir string, mode config.FileMode, group string) error {
	create := os.FileMode(0o755)
	if mode != 0 {
		create = mode.Perm()
	}
	if err := os.MkdirAll(dir, create); err != nil {
		return err
	}
	if mode != 0 {
		// MkdirAll is subject to the umask, and an existing directory keeps
		// its mode: set it explicitly.
		if err := os.Chmod(dir, mode.Perm()); err != nil {
			return err
		}
	}
	if group != "" {
		gid, err := config.LookupGroup(group)
		if err != nil {
			return fmt.Errorf("group %q: %w", group, err)
		}
		if err := os.Chown(dir, -1, gid); err != nil {
			return err
		}
	}
	return nil
}
