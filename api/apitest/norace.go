//go:build !race

package apitest

// raceDetector: see race.go.
const raceDetector = false
