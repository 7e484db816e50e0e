// Package graphiql serves the GraphiQL IDE from files embedded in the
// binary, so that it works with no network but the server's own: on a
// plane, behind a proxy, on an air-gapped network.
//
// The files in assets/ are GraphiQL 4's prebuilt UMD bundle and React 18's
// UMD builds, copied from the npm registry by update.sh (see VERSIONS).
// GraphiQL 4 rather than 5: version 5 ships only ES modules meant for a
// bundler, and this keeps the server free of a JavaScript build.
package graphiql

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed index.html assets/*.js assets/*.css
var files embed.FS

// Page serves the GraphiQL page, which talks to /graphql.
func Page() http.Handler {
	page, err := files.ReadFile("index.html")
	if err != nil {
		panic(err) // embedded at build time
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(page)
	})
}

// Assets serves the page's scripts and styles under /graphiql/.
func Assets() http.Handler {
	sub, err := fs.Sub(files, "assets")
	if err != nil {
		panic(err)
	}
	fileServer := http.StripPrefix("/graphiql/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		fileServer.ServeHTTP(w, r)
	})
}
