package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"follows/auth"
	"follows/db"
)

// secretSources names where a secret can be given, for errors.
const secretSources = "-secret, -secret-file, FOLLOWS_SECRET, FOLLOWS_SECRET_FILE or TOKEN_SECRET"

// secretSuffix names the file beside an embedded database that keeps its
// token secret when none is given: follows.db's is follows.db.secret.
const secretSuffix = ".secret"

// tokens is the server's token signer, under the secret given or, for an
// embedded (SQLite) database without one, the secret kept in the file
// beside it, made on first start: tokens then outlive a restart, as a
// user of the default setup expects. A server database without a secret
// is refused: its instances are many or replaced at will, and tokens under
// a secret each made for itself would fail on every other and end with
// it. Only an in-memory database, gone with the process anyway, gets a
// random secret. A secret that is given must be long enough
// (auth.MinSecret).
func (c config) tokens(log *slog.Logger) (*auth.Tokens, error) {
	if c.secret != "" {
		return c.givenTokens()
	}
	path, embedded := db.EmbeddedFile(c.dsn)
	switch {
	case !embedded:
		return nil, errors.New("a server database needs the token secret that all its instances share (" + secretSources + "): make one with `openssl rand -base64 48`")
	case path == "":
		log.Warn("no token secret configured (" + secretSources + ") and the database is in memory: using a random one, so tokens end with this process")
		return auth.NewTokens(auth.RandomSecret(), c.tokenTTL)
	}
	file := path + secretSuffix
	secret, made, err := keepSecret(file)
	if err != nil {
		return nil, err
	}
	if made {
		log.Info("no token secret configured ("+secretSources+"): made one and kept it beside the database, so tokens outlive restarts", "file", file)
	} else {
		log.Info("token secret read from the file beside the database", "file", file)
	}
	c.secret = secret
	return c.givenTokens()
}

// givenTokens is the signer of the secret given, refused when too short to
// resist an offline search from one token.
func (c config) givenTokens() (*auth.Tokens, error) {
	t, err := auth.NewTokens([]byte(c.secret), c.tokenTTL)
	if err != nil {
		return nil, fmt.Errorf("the token secret given (%s) is %d bytes; it must be at least %d: make one with `openssl rand -base64 48`",
			secretSources, len(c.secret), auth.MinSecret)
	}
	return t, nil
}

// mintingTokens is the token subcommand's signer: the secret given, or
// the one kept beside an embedded database by the server that uses it.
func (c config) mintingTokens() (*auth.Tokens, error) {
	if c.secret == "" {
		path, _ := db.EmbeddedFile(c.dsn)
		secret, err := readSecret(path + secretSuffix)
		if path == "" || errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("give the server's secret (" + secretSources + "); a server without one makes a random secret that no minted token matches")
		}
		if err != nil {
			return nil, err
		}
		c.secret = secret
	}
	return c.givenTokens()
}

// keepSecret returns the secret kept in file, first making the file,
// readable by its owner only, with a new secret when there is none.
// Instances starting at once on the same database agree on one secret:
// the file appears whole or not at all (a link to a finished temporary
// file), and the loser of the race reads the winner's.
func keepSecret(file string) (secret string, made bool, err error) {
	secret, err = readSecret(file)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*")
	if err != nil {
		return "", false, fmt.Errorf("make the token secret file: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600.
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(auth.RandomSecret()) + "\n")
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
		secret, err = readSecret(file)
		return secret, false, err
	}
	secret, err = readSecret(file)
	return secret, true, err
}

// readSecret reads a secret file as -secret-file does: a trailing newline
// is not part of it.
func readSecret(file string) (string, error) {
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
