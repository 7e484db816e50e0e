package main

import (
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"follows/api"
	"follows/api/trusted"
)

// givenBool is a boolean flag that records being set, on the command line
// or from the environment, for a default that another flag changes only
// when this one was not given.
type givenBool struct {
	flag.Value
	given *bool
}

func (g givenBool) Set(s string) error {
	*g.given = true
	return g.Value.Set(s)
}

func (g givenBool) IsBoolFlag() bool { return true }

func (g givenBool) Get() any { return g.Value.(flag.Getter).Get() }

// pathList is a flag that may be repeated, each value a comma-separated
// list of paths, which it adds to.
type pathList struct{ paths *[]string }

func (l pathList) String() string {
	if l.paths == nil {
		return ""
	}
	return strings.Join(*l.paths, ",")
}

func (l pathList) Set(v string) error {
	*l.paths = append(*l.paths, list(v)...)
	return nil
}

func (l pathList) Get() any { return l.String() }

// list splits a comma-separated flag value, dropping blanks.
func list(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// openTrusted loads the -trusted-documents, refusing to start on a
// manifest that does not load, and settles -trusted-only's default for
// GraphiQL: off, since every query it sends would be refused, unless
// -no-playground was given (docs/trusted-documents.md). It returns the
// function that stops reloading them on SIGHUP.
func (s *server) openTrusted(log *slog.Logger, m *api.Metrics) (stop func(), err error) {
	if len(s.trusted) == 0 {
		return func() {}, nil
	}
	if s.api.Trusted, err = api.OpenTrustedDocuments(s.trusted); err != nil {
		return nil, err
	}
	if s.api.TrustedOnly && !s.playgroundGiven {
		s.api.NoPlayground = true
	}
	log.Info("trusted documents", "documents", s.api.Trusted.Current().Len(), "files", len(s.trusted), "only", s.api.TrustedOnly)
	return reloadOnHangup(s.api.Trusted, log, m), nil
}

// reloadOnHangup reloads docs at each SIGHUP until stop is called. A
// reload swaps the whole set at once, so that requests in flight finish
// with the set they started with; one whose manifests do not load keeps
// the set in force and logs why.
func reloadOnHangup(docs *trusted.Documents, log *slog.Logger, m *api.Metrics) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				set, err := docs.Reload()
				m.TrustedReload(err)
				if err != nil {
					log.Error("trusted documents not reloaded: the documents in force stay", "err", err)
					continue
				}
				log.Info("trusted documents reloaded", "documents", set.Len())
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
