package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeepSecret returns the secret kept in file, first making the file,
// readable by its owner only, with a new secret when there is none.
// Instances starting at once on the same database agree on one secret:
// the file appears whole or not at all (a link to a finished temporary
// file), and the loser of the race reads the winner's.
func KeepSecret(file string) (secret string, made bool, err error) {
	secret, err = ReadSecret(file)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*")
	if err != nil {
		return "", false, fmt.Errorf("make the token secret file: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600.
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(RandomSecret()) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("make the token secret file: %w", err)
	}
	if err := os.Link(tmp.Name(), file); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("make the token secret file: %w", err)
	} else if err != nil {
		secret, err = ReadSecret(file)
		return secret, false, err
	}
	secret, err = ReadSecret(file)
	return secret, true, err
}

// ReadSecret reads a secret file as the server's -secret-file does: a trailing newline
// is not part of it.
func ReadSecret(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read the token secret file: %w", err)
	}
	secret := strings.TrimRight(string(b), "\r\n")
	if secret == "" {
		return "", fmt.Errorf("the token secret file %s is empty", file)
	}
	return secret, nil
}
