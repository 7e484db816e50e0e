package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

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
func (c *server) tokens(log *slog.Logger) (*auth.Tokens, error) {
	if c.secret != "" {
		return c.givenTokens()
	}
	path, embedded := db.EmbeddedFile(c.dsn)
	switch {
	case !embedded:
		return nil, errors.New("a server database needs the token secret that all its instances share (" + secretSources + "): make one with `openssl rand -base64 48`")
	case path == "":
		log.Warn("no token secret configured (" + secretSources + ") and the database is in memory: using a random one, so tokens end with this process")
		return auth.NewTokens(auth.RandomSecret(), c.ttl)
	}
	file := path + secretSuffix
	secret, made, err := auth.KeepSecret(file)
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
func (c *signing) givenTokens() (*auth.Tokens, error) {
	t, err := auth.NewTokens([]byte(c.secret), c.ttl)
	if err != nil {
		return nil, fmt.Errorf("the token secret given (%s) is %d bytes; it must be at least %d: make one with `openssl rand -base64 48`",
			secretSources, len(c.secret), auth.MinSecret)
	}
	return t, nil
}

// mintingTokens is the token subcommand's signer: the secret given, or
// the one kept beside an embedded database by the server that uses it.
func (c *signing) mintingTokens() (*auth.Tokens, error) {
	if c.secret == "" {
		path, _ := db.EmbeddedFile(c.dsn)
		secret, err := auth.ReadSecret(path + secretSuffix)
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
