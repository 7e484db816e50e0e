package graphcsv

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"follows/db"
)

// Version is the version of the folder format this build writes. A change
// to any file's columns, or to what a value means, is a new version: a
// build refuses a folder whose manifest says a version it does not know,
// rather than read it wrongly.
const Version = 2

// The files of an export folder. The manifest is written last, so that a
// folder an export did not finish (see WriteDir) has none and is
// refused.
const (
	ManifestFile = "manifest.csv"
	UsersFile    = "users.csv"
	BlocksFile   = "blocks.csv"
	FollowsFile  = "follows.csv"
)

// Manifest is manifest.csv: the format's version, the highest user id the
// exported database ever gave out, and how many rows each file holds, so
// that a file cut short is found.
type Manifest struct {
	Version                int
	LastUserID             int64
	Users, Blocks, Follows int
}

var manifestHeader = []string{"Version", "LastUserId", "Users", "Blocks", "Follows"}

// WriteManifest writes manifest.csv, as ReadManifest reads it, to w.
func WriteManifest(w io.Writer, m Manifest) error {
	cw := csv.NewWriter(w)
	cw.Write(manifestHeader)
	cw.Write([]string{strconv.Itoa(m.Version), strconv.FormatInt(m.LastUserID, 10), strconv.Itoa(m.Users), strconv.Itoa(m.Blocks), strconv.Itoa(m.Follows)})
	cw.Flush()
	return cw.Error()
}

// ReadManifest reads manifest.csv from r, called name in errors. Its
// version is checked before anything else is, so that a later version
// whose columns differ is refused for its version.
func ReadManifest(name string, r io.Reader) (Manifest, error) {
	bad := func(line int, reason string) (Manifest, error) {
		return Manifest{}, &db.RowError{Pos: db.Pos{File: name, Line: line}, Reason: reason}
	}
	recs, err := readAll(r, 3) // bounded, as every file's records are
	if err != nil {
		return bad(1, err.Error())
	}
	if len(recs) == 0 || len(recs[0]) == 0 || !strings.EqualFold(strings.TrimSpace(recs[0][0]), "Version") {
		return bad(1, "not a manifest: the header must be "+strings.Join(manifestHeader, ","))
	}
	if len(recs) != 2 {
		return bad(2, fmt.Sprintf("want one row, not %d", len(recs)-1))
	}
	vals := trimAll(recs[1])
	if v, err := strconv.Atoi(vals[0]); err != nil || v != Version {
		return bad(2, fmt.Sprintf("format version %s: this build reads version %d (and version 1, users.csv and follows.csv without a manifest); import it with the build that exported it, or a later one", shown(vals[0]), Version))
	}
	if strings.Join(trimAll(recs[0]), ",") != strings.Join(manifestHeader, ",") {
		return bad(1, "the header must be "+strings.Join(manifestHeader, ","))
	}
	if len(vals) != len(manifestHeader) {
		return bad(2, fmt.Sprintf("%d fields, want %d", len(vals), len(manifestHeader)))
	}
	m := Manifest{Version: Version}
	var nums [4]int64
	for i := range nums {
		n, err := strconv.ParseInt(vals[i+1], 10, 64)
		if err != nil || n < 0 {
			return bad(2, fmt.Sprintf("%s %s is not a whole number", manifestHeader[i+1], shown(vals[i+1])))
		}
		if _, ok := parseLastUserID(vals[1]); i == 0 && !ok {
			return bad(2, fmt.Sprintf("LastUserId %s is not %s", shown(vals[1]), lastUserIDRule))
		}
		nums[i] = n
	}
	m.LastUserID, m.Users, m.Blocks, m.Follows = nums[0], int(nums[1]), int(nums[2]), int(nums[3])
	return m, nil
}

// WriteDir writes a graph as a version 2 folder at dir, and returns the
// manifest. dir must not exist yet, or be an empty folder: users.csv
// holds every account's stamp, so export writes only into a folder of
// its own. The files are written into a new private folder (0700, each
// file made new, 0600) beside dir, with a random name no one else can
// have planted links in, and that folder is renamed to dir once every
// file is written and synced. So no file is written through a link or
// keeps the permissions of one already there, and dir, when it appears,
// is whole: an export that fails or is cut short leaves no dir (one that
// is killed leaves its hidden .NAME.export-* folder, manifest-less, which
// import refuses).
func WriteDir(dir string, g db.Graph) (_ Manifest, err error) {
	m := Manifest{Version: Version, LastUserID: g.LastUserID}
	dir = filepath.Clean(dir)
	empty, err := newDirAt(dir)
	if err != nil {
		return m, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return m, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".export-*")
	if err != nil {
		return m, fmt.Errorf("make the folder to write into: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	steps := []struct {
		file  string
		n     *int
		write func(io.Writer) (int, error)
	}{
		{UsersFile, &m.Users, func(w io.Writer) (int, error) { return WriteUsers(w, g.Users) }},
		{BlocksFile, &m.Blocks, func(w io.Writer) (int, error) { return WriteBlocks(w, g.Blocks) }},
		{FollowsFile, &m.Follows, func(w io.Writer) (int, error) { return WriteFollows(w, g.Follows) }},
		{ManifestFile, new(int), func(w io.Writer) (int, error) { return 1, WriteManifest(w, m) }},
	}
	for _, st := range steps {
		n, err := writeFile(filepath.Join(tmp, st.file), st.write)
		if err != nil {
			return m, fmt.Errorf("write %s: %w", st.file, err)
		}
		*st.n = n
	}
	syncDir(tmp)
	if empty {
		// rename(2) would replace an empty folder, but Go's os.Rename
		// refuses to; a folder something was put into meanwhile is not
		// removed, and a link made in its place is not followed (a
		// folder is not renamed onto one).
		if err := os.Remove(dir); err != nil {
			return m, fmt.Errorf("replace the empty folder %s: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return m, fmt.Errorf("move the written folder into place: %w", err)
	}
	syncDir(parent)
	return m, nil
}

// newDirAt says whether export may put its folder at dir: when nothing
// is there, or an empty folder (empty says so; it is replaced, not
// written into). A link is refused even to an empty folder, and a folder
// with anything in it, an earlier export included, is left alone.
func newDirAt(dir string) (empty bool, err error) {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case fi.Mode()&os.ModeSymlink != 0:
		return false, fmt.Errorf("%s is a symbolic link: export makes its folder itself and writes through no link; give a path where nothing is yet", dir)
	case !fi.IsDir():
		return false, fmt.Errorf("%s exists and is not a folder: give a path where nothing is yet", dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if names, err := f.Readdirnames(1); len(names) > 0 {
		return false, fmt.Errorf("%s is not empty: export writes a new folder of its own and replaces no file, an earlier export's neither; give a new path, or move the old folder away first", dir)
	} else if err != nil && err != io.EOF {
		return false, err
	}
	return true, nil
}

// writeFile makes the file at path, which must be new (O_EXCL, which
// follows no link either), with fn, and syncs it; it is readable by its
// owner only, as users.csv holds every account's stamp.
func writeFile(path string, fn func(w io.Writer) (int, error)) (int, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, err := fn(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// syncDir syncs a folder, so that the names in it (the files written,
// the folder renamed) survive a crash as the files' contents do. It is
// the best it can do: some systems cannot sync a folder, and then the
// names are left to them.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

// ReadDir opens a version 2 folder: it reads and checks the manifest, and
// returns the graph its files hold, each file's rows checked against the
// manifest's count once read, and what closes the files.
func ReadDir(dir string) (db.Graph, func() error, error) {
	mf, err := os.Open(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return db.Graph{}, nil, fmt.Errorf("%s has no %s: not an export folder, or one whose export did not finish (give -users and -follows for the files of version 1)", dir, ManifestFile)
	}
	if err != nil {
		return db.Graph{}, nil, err
	}
	m, err := ReadManifest(filepath.Join(dir, ManifestFile), mf)
	mf.Close()
	if err != nil {
		return db.Graph{}, nil, err
	}
	var files []*os.File
	closeAll := func() error {
		for _, f := range files {
			f.Close()
		}
		return nil
	}
	open := func(name string) (string, io.Reader, error) {
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		if err != nil {
			return path, nil, err
		}
		files = append(files, f)
		return path, f, nil
	}
	up, ur, err := open(UsersFile)
	if err != nil {
		closeAll()
		return db.Graph{}, nil, err
	}
	bp, br, err := open(BlocksFile)
	if err != nil {
		closeAll()
		return db.Graph{}, nil, err
	}
	fp, fr, err := open(FollowsFile)
	if err != nil {
		closeAll()
		return db.Graph{}, nil, err
	}
	return db.Graph{
		Users:      counted(up, m.Users, ReadUsers(up, ur)),
		Blocks:     counted(bp, m.Blocks, ReadBlocks(bp, br)),
		Follows:    counted(fp, m.Follows, ReadFollows(fp, fr)),
		LastUserID: m.LastUserID,
	}, closeAll, nil
}

// counted yields a file's rows, and then, when they were not as many as
// the manifest says, an error saying so.
func counted[T any](name string, want int, rows iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		n := 0
		for row, err := range rows {
			n++
			if !yield(row, err) {
				return
			}
		}
		if n != want {
			var zero T
			yield(zero, &db.RowError{Pos: db.Pos{File: name}, Reason: fmt.Sprintf("holds %d rows, the manifest says %d: the file is not whole", n, want)})
		}
	}
}
