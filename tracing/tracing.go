// Package tracing sets up the server's OpenTelemetry traces: an OTLP
// exporter over HTTP (protobuf) when the standard OTEL_ variables name a
// collector, and nothing at all when they do not, so that a server without
// a collector pays nothing for the instrumentation (docs/tracing.md).
//
// The SDK reads the variables itself: the exporter its endpoint, headers,
// timeout and TLS settings (OTEL_EXPORTER_OTLP_*), the tracer provider its
// sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), the batch span
// processor its queue and schedule (OTEL_BSP_*), the resource its
// service name and attributes (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
// This package only decides whether to trace at all, and refuses at start
// the settings it cannot honour rather than exporting nowhere.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ServiceName is the service.name of the server's spans unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise.
const ServiceName = "follows"

// The variables that turn tracing on: either endpoint, as the
// specification's exporters read them. Without one the SDK would send to
// localhost:4318, which a server should not do unasked.
const (
	endpointVar       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	tracesEndpointVar = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Enabled reports whether getenv asks for traces: an OTLP endpoint is set,
// OTEL_TRACES_EXPORTER is not "none", and OTEL_SDK_DISABLED is not "true".
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if exporters(getenv) == "none" {
		return false
	}
	return getenv(endpointVar) != "" || getenv(tracesEndpointVar) != ""
}

// exporters is OTEL_TRACES_EXPORTER, trimmed and in lower case.
func exporters(getenv func(string) string) string {
	return strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
}

// Start returns the tracer provider that exports the server's spans to
// the collector the environment names, or nil when Enabled is false: then
// nothing is made, and the server is not instrumented at all. getenv
// decides whether; the SDK reads the process's environment for the rest,
// as main's getenv is os.Getenv. The provider's Shutdown flushes the spans
// not yet sent; call it when the server has stopped.
func Start(ctx context.Context, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	if err := check(getenv); err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the default name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// WithBatcher's processor reads OTEL_BSP_*; NewTracerProvider, given
	// no sampler, reads OTEL_TRACES_SAMPLER and its argument.
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// check refuses what the exporter would otherwise ignore, or log once and
// then drop every span for: another exporter, another protocol, an
// endpoint that is not a URL.
func check(getenv func(string) string) error {
	switch e := exporters(getenv); e {
	case "", "otlp":
	default:
		return fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%s: only otlp (or none) is supported", e)
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(v)); p != "" && p != "http/protobuf" {
			return fmt.Errorf("tracing: %s=%s: only http/protobuf is supported", v, p)
		}
	}
	for _, v := range []string{endpointVar, tracesEndpointVar} {
		e := getenv(v)
		if e == "" {
			continue
		}
		if u, err := url.Parse(e); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("tracing: %s=%q: want an http:// or https:// URL, such as http://localhost:4318", v, e)
		}
	}
	return nil
}
