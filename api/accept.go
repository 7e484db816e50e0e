package api

import (
	"strconv"
	"strings"
)

// The media types /graphql answers in: the two of GraphQL over HTTP for
// one answer, and server-sent events for a stream.
const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
	mediaEventStream     = "text/event-stream"
)

// answerForm is how a request is to be answered, from its Accept header.
type answerForm struct {
	// json is the JSON media type of a one-shot answer: "" when the
	// client accepts neither (gqlgen then answers in its default) or
	// ranks a stream first.
	json string
	// stream: the client ranks server-sent events above any JSON answer,
	// so that even a query is answered as a stream (graphql-sse).
	stream bool
	// streamable: the client accepts text/event-stream, so that a
	// subscription may be answered as a stream although it ranks a JSON
	// answer first (urql's default Accept) or accepts it by a wildcard.
	streamable bool
}

// negotiate reads Accept headers as RFC 9110 (section 12.5.1) says: each
// media range with its q-value (1 if none; 0 is "not acceptable"), a
// media type taking the q-value of the most specific range that matches
// it. Among the answers the server can give, the client's first choice
// is the one of highest q-value, then matched most specifically, then
// listed first. Wildcards (*/*, application/*) accept a JSON answer,
// application/json as gqlgen has always given them; only a range that
// names text/event-stream ranks a stream first, while any that accepts
// it lets a subscription be one.
func negotiate(accept []string) answerForm {
	if len(accept) == 0 {
		// No Accept is any media type: JSON for what can have one
		// answer, a stream for a subscription.
		return answerForm{streamable: true}
	}
	ranges := parseAccept(accept)
	type choice struct {
		media       string
		q           float64
		specificity int
		position    int
	}
	var best *choice
	var sse choice
	// In the server's order of preference, which only decides between
	// media types that the same wildcard accepted.
	for _, media := range []string{mediaJSON, mediaGraphQLResponse, mediaEventStream} {
		q, specificity, position := ranges.match(media)
		c := choice{media, q, specificity, position}
		if media == mediaEventStream {
			sse = c
			if specificity < 2 {
				continue // a wildcard never ranks a stream first
			}
		}
		if q <= 0 {
			continue
		}
		if best == nil || c.q > best.q ||
			c.q == best.q && (c.specificity > best.specificity ||
				c.specificity == best.specificity && c.position < best.position) {
			best = &c
		}
	}
	f := answerForm{streamable: sse.q > 0}
	if best == nil {
		return f
	}
	if best.media == mediaEventStream {
		f.stream = true
	} else {
		f.json = best.media
	}
	return f
}

// mediaRange is one element of an Accept header.
type mediaRange struct {
	typ, subtype string
	q            float64
}

type mediaRanges []mediaRange

// maxMediaRanges bounds the ranges read from one request's Accept: no
// client lists more than a few, and each answer is matched against all.
const maxMediaRanges = 32

// parseAccept reads the media ranges of Accept header values, skipping
// any that is malformed or has a malformed q-value.
func parseAccept(values []string) mediaRanges {
	var out mediaRanges
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			if len(out) == maxMediaRanges {
				return out
			}
			if r, ok := parseMediaRange(item); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

func parseMediaRange(s string) (mediaRange, bool) {
	media, params, _ := strings.Cut(s, ";")
	typ, subtype, ok := strings.Cut(strings.ToLower(strings.TrimSpace(media)), "/")
	if !ok || typ == "" || subtype == "" || typ == "*" && subtype != "*" {
		return mediaRange{}, false
	}
	r := mediaRange{typ: typ, subtype: subtype, q: 1}
	for p := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue // other parameters (charset) do not narrow the match here
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || q < 0 || q > 1 {
			return mediaRange{}, false
		}
		r.q = q
		break // what follows q is accept-ext, not a media type parameter
	}
	return r, true
}

// match returns the q-value the ranges give media (a type/subtype in
// lower case), how specifically (2 named, 1 type/*, 0 */*, -1 none) and
// the position of the range that gave it.
func (rs mediaRanges) match(media string) (q float64, specificity, position int) {
	typ, subtype, _ := strings.Cut(media, "/")
	specificity, position = -1, len(rs)
	for i, r := range rs {
		s := -1
		switch {
		case r.typ == typ && r.subtype == subtype:
			s = 2
		case r.typ == typ && r.subtype == "*":
			s = 1
		case r.typ == "*":
			s = 0
		}
		if s > specificity {
			q, specificity, position = r.q, s, i
		}
	}
	return q, specificity, position
}
