package bundle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Users is what an image's /etc/passwd and /etc/group say about its users and groups.
// The zero value knows nobody, so only numeric users resolve.
type Users struct {
	byName map[string]passwdEntry
	byUID  map[uint32]passwdEntry
	groups []groupEntry
}

type passwdEntry struct {
	name     string
	uid, gid uint32
}

type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// ParseUsers reads passwd and group file contents (either may be empty). Malformed
// lines are skipped, as libc does: a broken line in an image must not stop its users
// resolving.
func ParseUsers(passwd, group []byte) Users {
	u := Users{byName: map[string]passwdEntry{}, byUID: map[uint32]passwdEntry{}}
	for _, f := range splitEntries(passwd) {
		if len(f) < 4 || f[0] == "" {
			continue
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		e := passwdEntry{name: f[0], uid: uint32(uid), gid: uint32(gid)}
		if _, dup := u.byName[e.name]; !dup {
			u.byName[e.name] = e
		}
		if _, dup := u.byUID[e.uid]; !dup {
			u.byUID[e.uid] = e
		}
	}
	for _, f := range splitEntries(group) {
		if len(f) < 3 || f[0] == "" {
			continue
		}
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			continue
		}
		g := groupEntry{name: f[0], gid: uint32(gid)}
		if len(f) > 3 && f[3] != "" {
			g.members = strings.Split(f[3], ",")
		}
		u.groups = append(u.groups, g)
	}
	return u
}

// splitEntries splits colon-separated lines, skipping blank lines and comments.
func splitEntries(b []byte) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Split(line, ":"))
	}
	return out
}

// LookupUsers reads rootfs/etc/passwd and rootfs/etc/group; a missing file counts as
// empty. Symlinks inside the image are not followed out of rootfs: the files are read
// only when they are regular files.
func LookupUsers(rootfs string) (Users, error) {
	read := func(rel string) ([]byte, error) {
		p := filepath.Join(rootfs, rel)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() || st.Size() > 16<<20 {
			return nil, nil
		}
		return os.ReadFile(p)
	}
	passwd, err := read("etc/passwd")
	if err != nil {
		return Users{}, fmt.Errorf("image users: %w", err)
	}
	group, err := read("etc/group")
	if err != nil {
		return Users{}, fmt.Errorf("image users: %w", err)
	}
	return ParseUsers(passwd, group), nil
}

// resolvedUser is the identity a container's process runs as.
type resolvedUser struct {
	uid, gid   uint32
	name       string   // from /etc/passwd, "" when unknown
	imageGroup []uint32 // groups /etc/group lists the user in
}

// resolveImageUser resolves an image's User field ("", "uid", "name", "uid:gid",
// "name:group") as runtimes do: empty means root; a name must exist in /etc/passwd; a
// numeric uid unknown to /etc/passwd gets gid 0.
func (u Users) resolveImageUser(spec string) (resolvedUser, error) {
	if spec == "" {
		return u.resolveUID(0), nil
	}
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	var r resolvedUser
	if n, err := strconv.ParseUint(userPart, 10, 32); err == nil {
		r = u.resolveUID(uint32(n))
	} else {
		e, ok := u.byName[userPart]
		if !ok {
			return resolvedUser{}, fmt.Errorf("image user %q: no user %q in the image's /etc/passwd", spec, userPart)
		}
		r = u.resolveUID(e.uid)
	}
	if hasGroup {
		if n, err := strconv.ParseUint(groupPart, 10, 32); err == nil {
			r.gid = uint32(n)
		} else {
			found := false
			for _, g := range u.groups {
				if g.name == groupPart {
					r.gid, found = g.gid, true
					break
				}
			}
			if !found {
				return resolvedUser{}, fmt.Errorf("image user %q: no group %q in the image's /etc/group", spec, groupPart)
			}
		}
	}
	return r, nil
}

// resolveUID gives uid its primary group and its /etc/group memberships.
func (u Users) resolveUID(uid uint32) resolvedUser {
	r := resolvedUser{uid: uid}
	if e, ok := u.byUID[uid]; ok {
		r.gid, r.name = e.gid, e.name
		for _, g := range u.groups {
			for _, m := range g.members {
				if m == e.name && g.gid != e.gid {
					r.imageGroup = append(r.imageGroup, g.gid)
					break
				}
			}
		}
	}
	return r
}
