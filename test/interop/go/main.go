// A relying party built the way go-oidc's own example builds one (github.com/coreos/go-oidc/v3
// with golang.org/x/oauth2), each library at its defaults: discovery, the code flow with state and
// nonce (x/oauth2 sends no PKCE unless asked), ID token verification, userinfo, refresh, and a
// resource server's check of the access token with go-oidc's verifier. test/interop/matrix.test.ts
// drives it over HTTP.
//
// Environment: IDFORGE_ISSUER, IDFORGE_CLIENT_ID, IDFORGE_CLIENT_SECRET, IDFORGE_SCOPES,
// IDFORGE_API_AUDIENCE; for client_credentials IDFORGE_SYSTEM_ISSUER, IDFORGE_SYSTEM_CLIENT_ID,
// IDFORGE_SYSTEM_CLIENT_SECRET, IDFORGE_ADMIN_AUDIENCE, IDFORGE_ADMIN_URL. Prints
// "listening http://127.0.0.1:<port>" once it serves.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

type pending struct{ nonce string }

func random() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func claimsOf(t *oidc.IDToken) map[string]any {
	var m map[string]any
	if err := t.Claims(&m); err != nil {
		return map[string]any{"error": err.Error()}
	}
	return m
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func failed(w http.ResponseWriter, step string, err error) {
	reply(w, http.StatusBadGateway, map[string]string{"step": step, "error": err.Error()})
}

func versions() map[string]string {
	out := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/coreos/go-oidc/v3" || d.Path == "golang.org/x/oauth2" || d.Path == "github.com/go-jose/go-jose/v4" {
				out[d.Path] = d.Version
			}
		}
	}
	return out
}

func main() {
	ctx := context.Background()
	issuer := os.Getenv("IDFORGE_ISSUER")
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "discovery:", err)
		os.Exit(1)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	base := "http://" + listener.Addr().String()
	config := oauth2.Config{
		ClientID:     os.Getenv("IDFORGE_CLIENT_ID"),
		ClientSecret: os.Getenv("IDFORGE_CLIENT_SECRET"),
		Endpoint:     provider.Endpoint(),
		RedirectURL:  base + "/callback",
		Scopes:       strings.Fields(os.Getenv("IDFORGE_SCOPES")),
	}
	idTokens := provider.Verifier(&oidc.Config{ClientID: config.ClientID})
	// A resource server: the same verifier, for the API's audience.
	accessTokens := provider.Verifier(&oidc.Config{ClientID: os.Getenv("IDFORGE_API_AUDIENCE")})

	var mu sync.Mutex
	flows := map[string]pending{}

	http.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		state, nonce := random(), random()
		mu.Lock()
		flows[state] = pending{nonce: nonce}
		mu.Unlock()
		http.Redirect(w, r, config.AuthCodeURL(state, oidc.Nonce(nonce)), http.StatusFound)
	})

	http.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		flow, ok := flows[q.Get("state")]
		delete(flows, q.Get("state"))
		mu.Unlock()
		if !ok {
			reply(w, http.StatusBadRequest, map[string]string{"step": "state", "error": "unknown state", "authorizationError": q.Get("error"), "description": q.Get("error_description")})
			return
		}
		if e := q.Get("error"); e != "" {
			reply(w, http.StatusForbidden, map[string]string{"step": "authorization", "error": e, "description": q.Get("error_description")})
			return
		}
		token, err := config.Exchange(r.Context(), q.Get("code"))
		if err != nil {
			failed(w, "token", err)
			return
		}
		raw, _ := token.Extra("id_token").(string)
		idToken, err := idTokens.Verify(r.Context(), raw)
		if err != nil {
			failed(w, "id_token", err)
			return
		}
		if idToken.Nonce != flow.nonce {
			reply(w, http.StatusBadGateway, map[string]string{"step": "id_token", "error": "nonce mismatch"})
			return
		}
		info, err := provider.UserInfo(r.Context(), oauth2.StaticTokenSource(token))
		if err != nil {
			failed(w, "userinfo", err)
			return
		}
		var userinfo map[string]any
		if err := info.Claims(&userinfo); err != nil {
			failed(w, "userinfo", err)
			return
		}
		access, err := accessTokens.Verify(r.Context(), token.AccessToken)
		if err != nil {
			failed(w, "access_token", err)
			return
		}
		// A token source given only the refresh token refreshes at once.
		refreshed, err := config.TokenSource(r.Context(), &oauth2.Token{RefreshToken: token.RefreshToken}).Token()
		if err != nil {
			failed(w, "refresh", err)
			return
		}
		refreshedAccess, err := accessTokens.Verify(r.Context(), refreshed.AccessToken)
		if err != nil {
			failed(w, "refreshed_access_token", err)
			return
		}
		out := map[string]any{
			"versions":        versions(),
			"idToken":         claimsOf(idToken),
			"userinfo":        userinfo,
			"accessToken":     claimsOf(access),
			"refreshed":       claimsOf(refreshedAccess),
			"refreshTokenNew": refreshed.RefreshToken != "" && refreshed.RefreshToken != token.RefreshToken,
		}
		if rawRefreshed, ok := refreshed.Extra("id_token").(string); ok && rawRefreshed != "" {
			t, err := idTokens.Verify(r.Context(), rawRefreshed)
			if err != nil {
				failed(w, "refreshed_id_token", err)
				return
			}
			out["refreshedIdToken"] = claimsOf(t)
		}
		reply(w, http.StatusOK, out)
	})

	http.HandleFunc("/client-credentials", func(w http.ResponseWriter, r *http.Request) {
		system, err := oidc.NewProvider(r.Context(), os.Getenv("IDFORGE_SYSTEM_ISSUER"))
		if err != nil {
			failed(w, "discovery", err)
			return
		}
		cc := clientcredentials.Config{
			ClientID:       os.Getenv("IDFORGE_SYSTEM_CLIENT_ID"),
			ClientSecret:   os.Getenv("IDFORGE_SYSTEM_CLIENT_SECRET"),
			TokenURL:       system.Endpoint().TokenURL,
			Scopes:         []string{"admin"},
			EndpointParams: url.Values{"resource": {os.Getenv("IDFORGE_ADMIN_AUDIENCE")}},
		}
		token, err := cc.Token(r.Context())
		if err != nil {
			failed(w, "token", err)
			return
		}
		access, err := system.Verifier(&oidc.Config{ClientID: os.Getenv("IDFORGE_ADMIN_AUDIENCE")}).Verify(r.Context(), token.AccessToken)
		if err != nil {
			failed(w, "access_token", err)
			return
		}
		// The token at work: the admin API, through the token source's client.
		res, err := cc.Client(r.Context()).Get(os.Getenv("IDFORGE_ADMIN_URL") + "/tenants")
		if err != nil {
			failed(w, "admin_api", err)
			return
		}
		res.Body.Close()
		reply(w, http.StatusOK, map[string]any{"accessToken": claimsOf(access), "adminApiStatus": res.StatusCode})
	})

	fmt.Println("listening " + base)
	if err := http.Serve(listener, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
