package state

import (
	"os"
	"strconv"
	"syscall"
)

// heldLockFile finds the state's lock among this process's open files: Herrscher's daemon
// takes flock on <dir>/.<base>.lock (LockState) before it loads the state and keeps only a
// release func, so the package looks for a descriptor with the lock file's device and inode
// through which a non-blocking exclusive flock succeeds (flock locks belong to the open
// file, so that succeeds only for the holder's own descriptor). It returns a duplicate the
// caller closes, or nil.
func heldLockFile(lockPath string) *os.File {
	var want syscall.Stat_t
	if err := syscall.Stat(lockPath, &want); err != nil {
		return nil
	}
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			continue
		}
		for _, n := range names {
			fd, err := strconv.Atoi(n)
			if err != nil || fd < 3 {
				continue
			}
			var st syscall.Stat_t
			if syscall.Fstat(fd, &st) != nil || st.Dev != want.Dev || st.Ino != want.Ino {
				continue
			}
			if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				continue
			}
			dup, err := syscall.Dup(fd)
			if err != nil {
				continue
			}
			syscall.CloseOnExec(dup)
			return os.NewFile(uintptr(dup), lockPath)
		}
		return nil
	}
	return nil
}
