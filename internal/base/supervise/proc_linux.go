package supervise

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// sysProcAttr puts the child in a process group of its own and asks the
// kernel to SIGKILL it if the thread that started it (kept until the child
// is reaped) goes away, which happens when kitsoki dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// markerEnv carries, in every supervised child's environment, the tokens
// of the Processes it descends from (comma-separated). Descendants inherit
// it, so one that left the child's process group and session (setsid, a
// double fork) is still known as the child's when it is orphaned.
const markerEnv = "KITSOKI_SUPERVISED"

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

var subreaper sync.Once

// prepare makes kitsoki a child subreaper (once: orphaned descendants of
// its children are re-parented to kitsoki, not to init) and marks cmd's
// environment with a fresh token, which it returns.
func prepare(cmd *exec.Cmd) string {
	subreaper.Do(func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
	var b [8]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	tokens := token
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, markerEnv+"="); ok {
			tokens = v + "," + token // a kitsoki under a kitsoki: both can tell
			continue
		}
		out = append(out, kv)
	}
	cmd.Env = append(out, markerEnv+"="+tokens)
	return token
}

// sweep kills and reaps what the child left behind outside its process
// group, which kitsoki, a child subreaper, adopted when their parents
// died: its children that carry p's token; those in a process group or
// session of one of them, or in the child's own group (a descendant that
// cleared its environment, the zombie of a double fork's middle
// process). Killing one re-parents its own children to kitsoki, so it
// goes round after round until a round finds nothing. kitsoki's own
// process group and session never count: the other children of the
// program are there.
func (p *Process) sweep() {
	if p.token == "" {
		return
	}
	own := map[int]bool{syscall.Getpgrp(): true}
	if sid, err := getsid(); err == nil {
		own[sid] = true
	}
	groups := map[int]bool{p.pid: true} // the child led a process group of its own
	// Rounds that killed something and waits for exiting children are
	// counted apart: a program with other children exiting all the time
	// (a server's plugins, parallel tests) makes the sweep wait, which
	// is no sign that p's descendants keep starting others.
	rounds, settles := 0, 0
	for rounds < maxRounds {
		kids := children()
		exiting := 0
		for _, k := range kids {
			if k.zombie {
				// A zombie's children come to kitsoki only once its last
				// thread has ended, which /proc does not show reliably.
				exiting++
				continue
			}
			has, known := carries(k.pid, p.token)
			if !known {
				exiting++
			}
			if has {
				k.marked = true
				for _, id := range []int{k.pgrp, k.sid} {
					if !own[id] {
						groups[id] = true
					}
				}
			}
		}
		doomed := 0
		for _, k := range kids {
			if !k.marked && !groups[k.pgrp] && !groups[k.sid] {
				continue
			}
			doomed++
			_ = syscall.Kill(k.pid, syscall.SIGKILL)
			reap(k.pid)
		}
		if doomed == 0 && exiting > 0 && settles < maxSettles {
			// A child in the middle of exiting (an empty environment
			// before it is a zombie, or a zombie whose other threads
			// are still ending) may be one of p's, whose children
			// kitsoki adopts only once it is gone. Look again in a
			// moment.
			settles++
			time.Sleep(time.Millisecond)
			continue
		}
		if doomed == 0 {
			return
		}
		rounds++
	}
	p.logger.Warn(p.name+" left descendants that keep starting others; gave up reaping them", "pid", p.pid)
}

// reap waits for child pid to end.
func reap(pid int) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

func getsid() (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

// child is one of kitsoki's children as /proc/<pid>/stat describes it.
type child struct {
	pid, ppid, pgrp, sid int
	zombie, marked       bool
}

// children lists kitsoki's children: after a reap, the processes
// re-parented to it and the children it started. It reads every
// process's stat for its parent, because the per-thread children lists
// miss a child while it moves between kitsoki's threads (one that ends
// passes its children on to another). The stat lines share one buffer, so
// a sweep allocates only for the children it finds.
func children() []*child {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []*child
	buf := make([]byte, statLineMax)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if c, ok := statOf(pid, buf); ok && c.ppid == self {
			out = append(out, &c)
		}
	}
	return out
}

// statLineMax bounds the part of a stat line read: the fields statOf
// needs come right after the command name, which is at most 64 bytes.
const statLineMax = 512

// statOf reads a process's state, process group and session from its
// stat line, read into buf.
func statOf(pid int, buf []byte) (child, bool) {
	line, ok := readStat(pid, buf)
	if !ok {
		return child{}, false
	}
	// pid (comm) state ppid pgrp session …; comm may hold spaces and ')'.
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return child{}, false
	}
	f, ok := leadingFields(line[i+1:])
	if !ok {
		return child{}, false
	}
	ppid, err0 := strconv.Atoi(string(f[1]))
	pgrp, err1 := strconv.Atoi(string(f[2]))
	sid, err2 := strconv.Atoi(string(f[3]))
	if err0 != nil || err1 != nil || err2 != nil {
		return child{}, false
	}
	return child{pid: pid, ppid: ppid, pgrp: pgrp, sid: sid, zombie: string(f[0]) == "Z"}, true
}

// readStat reads the start of /proc/<pid>/stat into buf.
func readStat(pid int, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, buf)
	if err != nil || n <= 0 {
		return nil, false
	}
	return buf[:n], true
}

// leadingFields splits off the first four space-separated fields of s.
func leadingFields(s []byte) ([4][]byte, bool) {
	var f [4][]byte
	for k := range f {
		s = bytes.TrimLeft(s, " ")
		j := bytes.IndexByte(s, ' ')
		if j < 0 {
			j = len(s)
		}
		if j == 0 {
			return f, false
		}
		f[k], s = s[:j], s[j:]
	}
	return f, true
}

// maxRounds bounds the sweep's rounds that killed something: a tree that
// still grows after that many is left, with a warning.
const maxRounds = 64

// maxSettles bounds the sweep's waits for exiting children (a
// millisecond each): a live child with an empty environment, or another
// child's zombie not yet waited for, costs a sweep that long at most.
const maxSettles = 64

// carries reports whether process pid's environment holds token in
// markerEnv, and whether that is known: a process that is exiting (not
// yet a zombie) shows an empty environment, or none at all.
func carries(pid int, token string) (has, known bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(b) == 0 {
		return false, false
	}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(markerEnv+"=")); ok {
			for t := range bytes.SplitSeq(v, []byte(",")) {
				if string(t) == token {
					return true, true
				}
			}
		}
	}
	return false, true
}
