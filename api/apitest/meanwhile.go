package apitest

import "sync"

// Meanwhile sends requests with send from n goroutines, without pause,
// until the returned stop is called; stop waits for them and returns what
// send said of each that failed (send returns "" for a success). For
// tests that change the server under load (a reload, a signal) and show
// no request was dropped.
func Meanwhile(n int, send func() string) (stop func() []string) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	done := make(chan struct{})
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if msg := send(); msg != "" {
					mu.Lock()
					failed = append(failed, msg)
					mu.Unlock()
				}
			}
		})
	}
	return func() []string {
		close(done)
		wg.Wait()
		return failed
	}
}
