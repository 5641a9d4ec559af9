package backendurl

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// How errors keep a URL's credentials hidden. The credentials are the
// userinfo: what lies between "//" and the '@' that ends the authority.
// An error never quotes them, nor anything taken from them, so that it is
// the same whatever their letters and digits:
//
//   - Open refuses without quoting it a URL whose credentials could be read
//     two ways: one with an '@' after the authority (an unencoded '/', '?'
//     or '#' in a password ends the authority early, and the rest of the
//     password would be read as the host, port, path or query), with a
//     '#', or whose userinfo does not parse.
//   - Past that check, the userinfo is the text before the authority's
//     last '@', which url.Parse puts in URL.User; Openers never quote
//     URL.User, and an error quotes the URL only as redacted shows it.
//   - A URL nested in another one's path or query, percent-encoded (as
//     migrate+<phase>:// URLs hold theirs), has its credentials hidden
//     wherever the outer URL or an Opener's message quotes it: Params and
//     the Openers quote values through Redact, and hideNested catches the
//     Opener that does not.

// credentialsMark replaces hidden credentials, in every redacted error.
const credentialsMark = "*"

// errStrayAt is the error for a URL with an '@' after its authority.
var errStrayAt = errors.New("backendurl: an '@' after the host list: a backend URL has '@' only to end its user name and password; " +
	"percent-encode '/', '?', '#' and '@' in a user name or password as %2F, %3F, %23 and %40, and '@' in a path or query value as %40")

// strayAt reports whether u has an '@' outside its userinfo. Parsed from
// text, such a URL was either written with an unencoded '/', '?', '#' or
// '@' in its credentials, or has an '@' in its path or query: nothing
// tells which, so it is refused.
func strayAt(u *url.URL) bool {
	return strings.Contains(u.Opaque+u.Host+u.EscapedPath()+u.RawQuery+u.Fragment, "@")
}

// redacted is u as a string for an error message: the userinfo replaced by
// credentialsMark, and so the credentials of URLs nested in its path or
// query (see redactText). It keeps the "//" of a URL without a host
// (migrate+both://?old=…), which url.URL.String drops.
func redacted(u *url.URL) string {
	const placeholder = "redacted" // url.User would escape "*"
	v := *u
	if v.User != nil {
		v.User = url.User(placeholder)
	}
	v.RawQuery = redactQuery(v.RawQuery)
	if p := v.Path; strings.Contains(p, "@") {
		v.Path, v.RawPath = redactText(p), ""
	}
	s := v.String()
	if v.User != nil {
		s = strings.Replace(s, "//"+placeholder+"@", "//"+credentialsMark+"@", 1)
	}
	if v.Scheme != "" && v.Opaque == "" && !strings.HasPrefix(s, v.Scheme+"://") {
		s = v.Scheme + "://" + strings.TrimPrefix(s, v.Scheme+":")
	}
	return s
}

// Redact returns text, a backend URL or what an error quotes of one (a
// decoded query value, a path), with the user name and password of every
// URL in it replaced by "*", those of URLs nested in its query
// included: everything from where credentials could start (after "//", or
// else after the first ':') to the last '@', however malformed the URL.
// Text without an '@', as typed or percent-encoded in a query, is returned
// as is. An [Opener] quotes what it reads from a URL through Redact (as
// [Params] does), so that a URL given where another value belongs does not
// show its credentials.
func Redact(text string) string { return redactText(text) }

// redactText is [Redact].
func redactText(s string) string {
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		start := 0
		if i := strings.Index(s, "//"); i >= 0 && i < at {
			start = i + 2
		} else if i := strings.IndexByte(s, ':'); i >= 0 && i < at {
			start = i + 1
		}
		s = s[:start] + credentialsMark + s[at:]
	}
	if base, query, ok := strings.Cut(s, "?"); ok {
		s = base + "?" + redactQuery(query)
	}
	return s
}

// redactQuery applies redactText to each name and value of query, a raw
// query string, that holds an '@' once decoded, and encodes the result
// back. Names and values without one keep their bytes.
func redactQuery(query string) string {
	if !strings.Contains(query, "@") && !strings.Contains(strings.ToUpper(query), "%40") {
		return query
	}
	parts := strings.Split(query, "&")
	for i, kv := range parts {
		k, v, hasV := strings.Cut(kv, "=")
		k, v = redactComponent(k), redactComponent(v)
		if parts[i] = k; hasV {
			parts[i] += "=" + v
		}
	}
	return strings.Join(parts, "&")
}

// redactComponent is redactText for one encoded name or value of a query.
// One with a malformed escape is replaced whole: encoded again, the
// escape would show as another one.
func redactComponent(enc string) string {
	d := lenientUnescape(enc)
	switch _, err := url.QueryUnescape(enc); {
	case !strings.Contains(d, "@"):
		return enc
	case err != nil:
		return credentialsMark
	}
	// '*' means the same encoded or not in a query: show the mark as is.
	return strings.ReplaceAll(url.QueryEscape(redactText(d)), "%2A", "*")
}

// lenientUnescape decodes s as a query component: '+' is a space, %XX the
// byte XX; a '%' that starts no escape is kept as it is, where
// url.QueryUnescape would give up on the whole text.
func lenientUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			n, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(n))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hideNested returns err with the credentials of the URLs nested in u's
// path, query names and query values hidden wherever err's message quotes
// one of those whole, decoded (as an Opener does: unknown query parameter
// "…", epoch="…"). It answers errors.Is as err does.
func hideNested(err error, u *url.URL) error {
	msg := err.Error()
	hide := func(s string) {
		if !strings.Contains(s, "@") {
			return
		}
		r := redactText(s)
		if q, qr := strconv.Quote(s), strconv.Quote(r); q[1:len(q)-1] != s {
			msg = strings.ReplaceAll(msg, q[1:len(q)-1], qr[1:len(qr)-1])
		}
		msg = strings.ReplaceAll(msg, s, r)
	}
	hide(u.Path)
	for kv := range strings.SplitSeq(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		hide(lenientUnescape(k))
		hide(lenientUnescape(v))
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose message had credentials hidden. It
// answers errors.Is for the error it replaces (so backend.ErrInvalid and
// the like still classify it) but does not unwrap to it: the original
// message would show the credentials.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the replaced error matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
