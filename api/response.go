package api

import (
	"context"
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Codes of the errors that stand for what a response would have carried
// beyond its limits.
const (
	CodeTooManyErrors    = "TOO_MANY_ERRORS"
	CodeResponseTooLarge = "RESPONSE_TOO_LARGE"
)

// responseLimits bounds what a response carries, whatever the request
// made it: at most MaxErrors errors, then one TOO_MANY_ERRORS saying how
// many more there were; and at most MaxBytes of data and errors, or else
// no data and one RESPONSE_TOO_LARGE error. The request limits keep honest
// responses well below both; these stop a cheap request from being
// answered with a large one (one validation error for each of 100,000
// unknown directives was 29.6 MB).
type responseLimits struct {
	MaxErrors, MaxBytes int
}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = responseLimits{}

func (responseLimits) ExtensionName() string                   { return "ResponseLimits" }
func (responseLimits) Validate(graphql.ExecutableSchema) error { return nil }

func (l responseLimits) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil {
		return resp
	}
	if n := len(resp.Errors); n > l.MaxErrors {
		resp.Errors = append(resp.Errors[:l.MaxErrors:l.MaxErrors],
			limitError(CodeTooManyErrors, "%d more errors were left out; a response reports at most %d", n-l.MaxErrors, l.MaxErrors))
	}
	size := len(resp.Data)
	if size <= l.MaxBytes && len(resp.Errors) > 0 {
		b, _ := json.Marshal(resp.Errors)
		size += len(b)
	}
	if size > l.MaxBytes {
		resp.Data = nil
		resp.Errors = gqlerror.List{limitError(CodeResponseTooLarge,
			"the response would be larger than %d bytes; ask for less, or page through lists with first and after", l.MaxBytes)}
	}
	return resp
}
