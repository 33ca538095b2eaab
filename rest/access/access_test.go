package access

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func deny(w http.ResponseWriter) { w.WriteHeader(http.StatusUnauthorized) }

func TestTheAPITokenGuardsEveryPathButTheIndex(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		path   string
		auth   string
		want   int
	}{
		{"without a token everything is open", Policy{}, "/feed", "", 200},
		{"the index is open for health checks", Policy{APIToken: "s3cret"}, "/", "", 200},
		{"feed without the token is refused", Policy{APIToken: "s3cret"}, "/feed", "", 401},
		{"feed with another token is refused", Policy{APIToken: "s3cret"}, "/feed", "Bearer s3cre", 401},
		{"feed with basic auth is refused", Policy{APIToken: "s3cret"}, "/feed", "Basic czNjcmV0", 401},
		{"feed with the token passes", Policy{APIToken: "s3cret"}, "/feed", "Bearer s3cret", 200},
		{"poll with the token passes", Policy{APIToken: "s3cret"}, "/poll", "Bearer s3cret", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.path, nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			tt.policy.API(http.HandlerFunc(ok), deny).ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status %d, want %d", w.Code, tt.want)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}

func TestTheConsoleAsksForBasicAuthOrTheAPIToken(t *testing.T) {
	tests := []struct {
		name           string
		policy         Policy
		user, password string
		want           int
	}{
		{"open by default", Policy{}, "", "", 200},
		{"user and password set: refused without", Policy{UIUser: "ops", UIPassword: "pw"}, "", "", 401},
		{"user and password set: wrong password", Policy{UIUser: "ops", UIPassword: "pw"}, "ops", "nope", 401},
		{"user and password set: wrong user", Policy{UIUser: "ops", UIPassword: "pw"}, "dev", "pw", 401},
		{"user and password set: right ones", Policy{UIUser: "ops", UIPassword: "pw"}, "ops", "pw", 200},
		{"only a token: refused without", Policy{APIToken: "tok"}, "", "", 401},
		{"only a token: any user with the token", Policy{APIToken: "tok"}, "anyone", "tok", 200},
		{"user set and a token: the token is no password", Policy{UIUser: "ops", UIPassword: "pw", APIToken: "tok"}, "ops", "tok", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/ui/", nil)
			if tt.user != "" || tt.password != "" {
				r.SetBasicAuth(tt.user, tt.password)
			}
			w := httptest.NewRecorder()
			tt.policy.Console(http.HandlerFunc(ok)).ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status %d, want %d", w.Code, tt.want)
			}
		})
	}
}

func TestSameOriginTakesOnlyTheServicesOwnPages(t *testing.T) {
	tests := []struct {
		name            string
		origin, referer string
		ok              bool
	}{
		{"origin of this host", "http://console.example:5343", "", true},
		{"origin in another case", "http://CONSOLE.example:5343", "", true},
		{"origin of another site", "http://evil.example", "", false},
		{"origin of another port", "http://console.example:8080", "", false},
		{"no origin, referer of this host", "", "http://console.example:5343/ui/crawl?x=1", true},
		{"null origin, referer of another site", "null", "http://evil.example/", false},
		{"neither header", "", "", false},
		{"an unreadable origin", "::::", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://console.example:5343/ui/submit", nil)
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.referer != "" {
				r.Header.Set("Referer", tt.referer)
			}
			if err := SameOrigin(r); (err == nil) != tt.ok {
				t.Errorf("SameOrigin = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
