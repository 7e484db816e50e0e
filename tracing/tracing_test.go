package tracing

import (
	"context"
	"strings"
	"testing"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// Without an endpoint, or with traces turned off, nothing is made: no
// exporter, no provider, so that the server is not instrumented at all.
func TestOffWithoutEndpoint(t *testing.T) {
	for name, kv := range map[string]map[string]string{
		"no OTEL_ variables":    {},
		"only a service name":   {"OTEL_SERVICE_NAME": "follows", "OTEL_TRACES_SAMPLER": "always_on"},
		"exporter none":         {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
		"SDK disabled":          {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces", "OTEL_SDK_DISABLED": "true"},
		"an empty endpoint set": {"OTEL_EXPORTER_OTLP_ENDPOINT": ""},
	} {
		t.Run(name, func(t *testing.T) {
			tp, err := Start(context.Background(), env(kv))
			if err != nil || tp != nil {
				t.Fatalf("Start = %v, %v; want no provider and no error", tp, err)
			}
		})
	}
}

// Either endpoint variable turns traces on; the provider shuts down
// (flushing nothing) without a collector to answer.
func TestOnWithEndpoint(t *testing.T) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Run(v, func(t *testing.T) {
			tp, err := Start(context.Background(), env(map[string]string{v: "http://127.0.0.1:4318"}))
			if err != nil || tp == nil {
				t.Fatalf("Start = %v, %v; want a provider", tp, err)
			}
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// What the server cannot honour is refused at start, naming the variable,
// rather than every span being dropped later.
func TestRefusesWhatItCannotHonour(t *testing.T) {
	const endpoint = "http://127.0.0.1:4318"
	for want, kv := range map[string]map[string]string{
		"OTEL_TRACES_EXPORTER=zipkin":                  {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "zipkin"},
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc":             {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json": {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
		"OTEL_EXPORTER_OTLP_ENDPOINT=":                 {"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
	} {
		t.Run(want, func(t *testing.T) {
			tp, err := Start(context.Background(), env(kv))
			if err == nil || tp != nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Start = %v, %v; want an error naming %s", tp, err, want)
			}
		})
	}
}
