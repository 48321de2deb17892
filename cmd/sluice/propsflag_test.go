package main

import (
	"maps"
	"testing"
)

// --prop and SLUICE_PROP keep Connect's comma-separated values whole: a
// comma starts a new pair only before key=.
func TestPropsFlagKeepsListValues(t *testing.T) {
	var p propsFlag
	for _, v := range []string{
		"listeners=http://:8083,https://:8443",
		"ssl.enabled.protocols=TLSv1.2,TLSv1.3,group.id=c",
		"config.providers=file,env\naccess.control.allow.methods=GET,POST",
	} {
		if err := p.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	want := map[string]string{
		"listeners": "http://:8083,https://:8443", "ssl.enabled.protocols": "TLSv1.2,TLSv1.3", "group.id": "c",
		"config.providers": "file,env", "access.control.allow.methods": "GET,POST",
	}
	if !maps.Equal(p.m, want) {
		t.Fatalf("got %v, want %v", p.m, want)
	}
	if err := p.Set(",a=b"); err == nil {
		t.Fatal("a value that starts with a comma is not key=value, but Set took it")
	}
}
