package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/loopback"
	"github.com/kitsoki/kitsoki/internal/base/outfile"
)

// TokenHeader is the header a page's requests that change something
// carry the token in (the page reads it from its own <meta>): a form
// another site posts cannot set it.
const TokenHeader = "X-Kitsoki-Token"

// TokenFile is the file in the sessions directory that keeps the server's
// token, so a restarted server still accepts the pages it served.
const TokenFile = ".web-token"

// Token is the token of the server whose sessions directory is dir: the
// one kept in dir/.web-token, or (renew, or none kept) a new one, written
// there (0600).
func Token(dir string, renew bool) (string, error) {
	path := filepath.Join(dir, TokenFile)
	if !renew {
		b, err := os.ReadFile(path)
		if t := strings.TrimSpace(string(b)); err == nil && validToken(t) {
			return t, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("web token: %w", err)
		}
	}
	t := NewToken()
	if err := outfile.MkdirAll(dir); err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	if err := outfile.WriteFile(path, []byte(t+"\n")); err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	return t, nil
}

// NewToken is 32 random bytes in hex.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validToken accepts what NewToken makes (and any hex of 32 or more
// digits): the token goes into a page's <meta> and a cookie as it is.
func validToken(t string) bool {
	if len(t) < 32 {
		return false
	}
	_, err := hex.DecodeString(t)
	return err == nil
}

// guard lets through the requests of a page the server served: over
// loopback they must name a loopback Host and Origin (loopback.Check);
// every request carries the token in the server's cookie or in
// TokenHeader, and one that changes something in TokenHeader. The printed
// URL's ?token= sets the cookie and is dropped from the address.
type guard struct {
	token  string
	cookie string
}

func newGuard(token string) *guard {
	sum := sha256.Sum256([]byte(token))
	// Cookies do not tell ports apart: the name keeps two servers' apart.
	return &guard{token: token, cookie: "kitsoki_web_" + hex.EncodeToString(sum[:4])}
}

func (g *guard) ok(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(g.token)) == 1
}

func (g *guard) wrap(next http.Handler) http.Handler {
	return loopback.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
			if !g.ok(t) {
				refuse(w, http.StatusUnauthorized, "the token in this address is not this server's: open the address kitsoki web printed")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: g.token, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Expires: time.Now().Add(30 * 24 * time.Hour)})
			q := r.URL.Query()
			q.Del("token")
			target := r.URL.Path
			if len(q) > 0 {
				target += "?" + q.Encode()
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		header := r.Header.Get(TokenHeader)
		c, _ := r.Cookie(g.cookie)
		if !g.ok(header) && (c == nil || !g.ok(c.Value)) {
			refuse(w, http.StatusUnauthorized, "this server needs its token: open the address kitsoki web printed (it carries ?token=…)")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !g.ok(header) {
			refuse(w, http.StatusForbidden, "a request that changes something carries the token in the "+TokenHeader+" header (the page sends it)")
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// refuse answers a refused request and closes the connection.
func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}
