package main

import (
	"fmt"
	"log/slog"

	"follows/auth"
)

// secretSources names where a secret can be given, for errors.
const secretSources = "-secret, -secret-file, FOLLOWS_SECRET, FOLLOWS_SECRET_FILE or TOKEN_SECRET"

// tokens is the server's token signer. Without a secret it makes a random
// one and warns: tokens then end with the process and work on no other
// instance. A secret that is given must be long enough (auth.MinSecret).
func (c config) tokens(log *slog.Logger) (*auth.Tokens, error) {
	if c.secret == "" {
		log.Warn("no token secret configured (" + secretSources + "): using a random one, so tokens end with this process and work on no other instance")
		return auth.NewTokens(auth.RandomSecret(), c.tokenTTL)
	}
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
