//go:build race

package apitest

// raceDetector is whether the race detector instruments this build, which
// slows code down unevenly, so that latencies measured under it describe
// the instrumentation more than the server.
const raceDetector = true
