package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/grove-dev/grove"
)

// Workspace ownership when the server runs as root.
//
// Commands never run as root inside, so a root server's commands run as
// the image's agent (uid 1000) while host git creates workspaces owned by
// root. Chowning the tree to 1000 would make host git (root) refuse the
// repository as of "dubious ownership", and safe.directory is not
// something the driver can set for it. So the tree stays root's and the
// command uid gets access through POSIX ACLs: an access entry on every file
// and directory, and a default entry on every directory, so what host git
// and the engine create later inherits it. Files created with a narrow mode
// (0444 objects, 0644 writes) get the agent's entry masked to that mode's
// group bits: readable, and replaceable (the directory is writable), but
// not writable in place.

// POSIX ACL xattr encoding (linux/posix_acl_xattr.h).
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
	xattrAccess = "system.posix_acl_access"
	xattrDflt   = "system.posix_acl_default"
)

type aclEntry struct {
	tag, perm uint16
	id        uint32
}

func encodeACL(entries []aclEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// acl is the ACL of a file with permission bits mode that also grants uid
// perm.
func acl(mode fs.FileMode, uid uint32, perm uint16) []byte {
	owner, group, other := uint16(mode>>6)&7, uint16(mode>>3)&7, uint16(mode)&7
	return encodeACL([]aclEntry{
		{aclUserObj, owner, aclNoID},
		{aclUser, perm, uid},
		{aclGroupObj, group, aclNoID},
		{aclMask, group | perm, aclNoID},
		{aclOther, other, aclNoID},
	})
}

// commandUID is the numeric uid commands run as.
func (d *Driver) commandUID() (int, error) {
	u, _, _ := strings.Cut(d.user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, grove.Errorf(grove.ErrInvalid, "docker driver user %q is not numeric", d.user)
	}
	return uid, nil
}

// grantWorkspace gives the command uid access to a workspace the server
// owns but commands do not (a root server): read-write for a writable
// workspace, read-only for an analysis one. It walks the tree once: a
// workspace whose root already carries the entry was granted before, and
// what appeared since inherited the default entries.
func (d *Driver) grantWorkspace(dir string, writable bool) error {
	dirPerm, filePerm := uint16(5), uint16(4)
	if writable {
		dirPerm, filePerm = 7, 6
	}
	uid, err := d.commandUID()
	if err != nil {
		return err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "workspace directory: %v", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) == uid || os.Geteuid() != 0 {
		// Already the command user's, or a non-root server whose commands
		// run as itself.
		return nil
	}
	if granted(dir, uint32(uid)) {
		return nil
	}
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type()&fs.ModeSymlink != 0 {
			return nil // ACLs belong to targets; links inside are walked as what they are
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm()
		if e.IsDir() {
			if err := syscall.Setxattr(p, xattrDflt, acl(mode, uint32(uid), dirPerm), 0); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			return syscall.Setxattr(p, xattrAccess, acl(mode, uint32(uid), dirPerm), 0)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		perm := filePerm
		if mode&0o100 != 0 {
			perm |= 1
		}
		return syscall.Setxattr(p, xattrAccess, acl(mode, uint32(uid), perm), 0)
	})
	if err != nil {
		if errors.Is(err, syscall.ENOTSUP) {
			return grove.Errorf(grove.ErrUnavailable,
				"the workspace's filesystem has no POSIX ACLs, so uid %d cannot be given access to a root-owned workspace: run the server as a non-root user (%v)", uid, err)
		}
		return fmt.Errorf("grant uid %d access to the workspace: %v: %w", uid, err, grove.ErrUnavailable)
	}
	return nil
}

// granted reports whether dir's default ACL already names uid.
func granted(dir string, uid uint32) bool {
	buf := make([]byte, 256)
	n, err := syscall.Getxattr(dir, xattrDflt, buf)
	if err != nil || n < 4 {
		return false
	}
	for b := buf[4:n]; len(b) >= 8; b = b[8:] {
		if binary.LittleEndian.Uint16(b) == aclUser && binary.LittleEndian.Uint32(b[4:]) == uid {
			return true
		}
	}
	return false
}
