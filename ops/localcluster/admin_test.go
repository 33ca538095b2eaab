package localcluster

import (
	"strings"
	"testing"
)

func TestEveryComponentButRESTGetsAnAdminAddressOfItsOwn(t *testing.T) {
	components := []spec{{name: "kafka-monitor"}, {name: "redis-monitor"}, {name: "crawler-link-1"}, {name: "crawler-link-2"}, {name: "rest"}}
	got, err := withAdminAddrs([]string{"ADMIN_ADDR=:9412"}, components)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, s := range got {
		addr := lookupEnv(s.env, adminSetting)
		if s.name == "rest" {
			if addr != "" {
				t.Errorf("rest got ADMIN_ADDR %q; it serves /metrics on its API port", addr)
			}
			continue
		}
		if !strings.HasPrefix(addr, "127.0.0.1:") || seen[addr] != "" {
			t.Errorf("%s: ADMIN_ADDR %q (also %s's)", s.name, addr, seen[addr])
		}
		seen[addr] = s.name
	}
	summary := adminSummary([][]spec{got})
	for _, s := range got[:4] {
		if want := s.name + " http://" + lookupEnv(s.env, adminSetting) + "/metrics"; !strings.Contains(summary, want) {
			t.Errorf("summary %q lacks %q", summary, want)
		}
	}
}

func TestAnEmptyAdminAddrInTheEnvironmentTurnsTheEndpointsOff(t *testing.T) {
	got, err := withAdminAddrs([]string{"ADMIN_ADDR="}, []spec{{name: "crawler-link-1", env: []string{"ADMIN_ADDR="}}})
	if err != nil {
		t.Fatal(err)
	}
	if addr := lookupEnv(got[0].env, adminSetting); addr != "" {
		t.Errorf("ADMIN_ADDR %q", addr)
	}
	if s := adminSummary([][]spec{got}); !strings.HasPrefix(s, "none") {
		t.Errorf("summary %q", s)
	}
}
