package backendurl

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// minSecretRun is the shortest run of a URL's userinfo that redaction hides
// wherever it appears in an error. Shorter runs cannot be told apart from
// ordinary words ("h1", ":"); longer ones are hidden even when they also
// occur elsewhere, so a message may lose a few harmless bytes.
const minSecretRun = 4

// secretsOf returns what must never appear in an error about rawURL: the
// text between where credentials could start and the last '@', as typed
// and percent-decoded. It does not parse rawURL, so a mistyped URL
// ("redis//:pw@h", a password with an unescaped '/', '#' or '?') is covered
// as well as a well-formed one. A URL without '@' has no secret.
func secretsOf(rawURL string) []string {
	at := strings.LastIndexByte(rawURL, '@')
	if at < 0 {
		return nil
	}
	start := 0
	if i := strings.Index(rawURL, "//"); i >= 0 && i < at {
		start = i + 2
	} else if i := strings.IndexByte(rawURL, ':'); i >= 0 && i < at {
		start = i + 1
	}
	s := rawURL[start:at]
	out := []string{s}
	if t := strings.TrimLeft(s, "/"); t != s && t != "" {
		out = append(out, t) // "scheme:/user@h": the userinfo may start after the '/'
	}
	if d, err := url.PathUnescape(s); err == nil && d != s {
		out = append(out, d)
	}
	for _, sec := range out {
		if q := strconv.Quote(sec); q[1:len(q)-1] != sec {
			out = append(out, q[1:len(q)-1]) // as %q prints it
		}
	}
	return out
}

// allSecretsOf is secretsOf(rawURL) plus the secrets of every URL nested
// in its query as a value (as migrate+<phase>://?old=URL&new=URL has them),
// in the forms the value may take in a message: decoded, and re-encoded as
// a query value or a path segment. A percent-encoded inner URL has no '@'
// of its own, so secretsOf alone would find nothing.
func allSecretsOf(rawURL string) []string {
	out := secretsOf(rawURL)
	_, query, ok := strings.Cut(rawURL, "?")
	if !ok {
		return out
	}
	for kv := range strings.SplitSeq(query, "&") {
		_, v, _ := strings.Cut(kv, "=")
		d, err := url.QueryUnescape(v)
		if err != nil || !strings.Contains(d, "@") || d == rawURL {
			continue
		}
		for _, sec := range allSecretsOf(d) {
			out = append(out, sec, url.QueryEscape(sec), url.PathEscape(sec))
		}
	}
	return out
}

// scrub replaces, until none is left, every run of msg that occurs in one
// of secrets and is at least minSecretRun bytes long (or a whole shorter
// secret) with "*". Each pass shortens msg, so it ends.
func scrub(msg string, secrets []string) string {
	for changed := true; changed; {
		changed = false
		var b strings.Builder
		for i := 0; i < len(msg); {
			if n := longestSecretRun(msg[i:], secrets); n > 0 {
				b.WriteByte('*')
				i += n
				changed = true
				continue
			}
			b.WriteByte(msg[i])
			i++
		}
		msg = b.String()
	}
	return msg
}

// longestSecretRun returns the length of the longest prefix of s that is
// long enough to hide — at least minSecretRun bytes, or a whole secret
// shorter than that — and occurs in one of secrets; 0 if there is none.
func longestSecretRun(s string, secrets []string) int {
	best := 0
	for _, sec := range secrets {
		if len(sec) < 2 {
			continue // a single byte cannot be hidden without hiding that letter everywhere
		}
		n := 0
		for n < len(s) && strings.Contains(sec, s[:n+1]) {
			n++
		}
		if n >= min(minSecretRun, len(sec)) && n > best {
			best = n
		}
	}
	return best
}

// redactedError is an error whose message was scrubbed of a URL's
// credentials. It answers errors.Is for the error it replaces (so
// backend.ErrInvalid and the like still classify it) but does not unwrap to
// it: the original message would show the credentials.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the replaced error matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

// redact returns err with every run of secrets hidden, or err itself when
// there is nothing to hide.
func redact(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := scrub(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
