package worker

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/setting"
)

// jobUser is the user jobs run as (Config.RunAs): its ids, looked up once
// when the worker starts, and its home directory if it has one.
type jobUser struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32
	home   string // "" when the user has no home directory of its own here
}

// lookupJobUser resolves Config.RunAs (a name or a uid). Running commands
// as another user needs root; root itself is refused, since it would give
// jobs everything the worker has.
func lookupJobUser(spec string) (*jobUser, error) {
	if err := canRunAs(); err != nil {
		return nil, setting.Unsafe("RunAs", spec, err.Error(), spool.ErrInvalidArgument)
	}
	u, err := user.Lookup(spec)
	if _, notNumber := strconv.ParseUint(spec, 10, 32); err != nil && notNumber == nil {
		u, err = user.LookupId(spec)
	}
	if err != nil {
		return nil, setting.Unsafe("RunAs", spec, "is not a user of this machine: create one for jobs (useradd --system --no-create-home --shell /usr/sbin/nologin spool-job)", spool.ErrInvalidArgument)
	}
	ju := &jobUser{name: u.Username}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has ids %s:%s, which are not numbers", spec, u.Uid, u.Gid)
	}
	if uid == 0 {
		return nil, setting.Unsafe("RunAs", spec, "is root: jobs would have everything the worker has; give a user of their own", spool.ErrInvalidArgument)
	}
	ju.uid, ju.gid = uint32(uid), uint32(gid)
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("the groups of user %s: %w", spec, err)
	}
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil {
			ju.groups = append(ju.groups, uint32(g))
		}
	}
	// A home that is not the user's own (system users often have / or
	// /nonexistent) is no home: the job's directory serves instead.
	if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() && ju.made(fi) {
		ju.home = u.HomeDir
	}
	return ju, nil
}

// credential is what a process started as the user is given: its uid, its
// primary group and its other groups (and none of the worker's).
func (u *jobUser) credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: u.groups}
}

// own gives the user path (a directory the worker made for the job).
func (u *jobUser) own(path string) error {
	if u == nil {
		return nil
	}
	return os.Lchown(path, int(u.uid), int(u.gid))
}

// environ is the worker's environment as a job of the user sees it: HOME,
// USER and LOGNAME are the user's, HOME being the user's home or, for a
// user without one, home (the job's own directory).
func (u *jobUser) environ(worker []string, home string) []string {
	if u == nil {
		return worker
	}
	if u.home != "" {
		home = u.home
	}
	env := make([]string, 0, len(worker)+3)
	for _, kv := range worker {
		name, _, _ := strings.Cut(kv, "=")
		if name != "HOME" && name != "USER" && name != "LOGNAME" {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "USER="+u.name, "LOGNAME="+u.name)
}

// made reports whether the file fi describes is the user's (not, say, a
// second name the user gave a file of the worker's).
func (u *jobUser) made(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == u.uid
}

// cannotEnter says which directory on the way to dir the user may not pass
// through ("" when the user reaches dir): jobs' directories are made
// there, and the user must reach them.
func (u *jobUser) cannotEnter(dir string) string {
	if u == nil {
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err.Error()
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err.Error()
		}
		if !u.mayEnter(fi) {
			return fmt.Sprintf("%s has mode %#o", d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// mayEnter reports whether the user may pass through the directory fi
// describes (search permission, as the user, a group of theirs, or anyone).
func (u *jobUser) mayEnter(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // not knowable here: the job finds out
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == u.uid:
		return perm&0o100 != 0
	case st.Gid == u.gid || slices.Contains(u.groups, st.Gid):
		return perm&0o010 != 0
	}
	return perm&0o001 != 0
}
