package main

import "testing"

func TestBuildPutsTheSharedFunctionsAfterTheLeadingComment(t *testing.T) {
	got := Build("k.lua", "-- health of K\n-- second line\nreturn f()\n", "local function f()\n  return {status = \"Healthy\"}\nend\n\n")
	want := "-- health of K\n-- second line\n" +
		"-- Written by `make manifests` from src/k.lua and src/common.lua: edit those.\n" +
		"local function f()\n  return {status = \"Healthy\"}\nend\n\nreturn f()\n"
	if got != want {
		t.Fatalf("Build =\n%s\nwant\n%s", got, want)
	}
}
