package bench

import "testing"

// The idle-resync goal counts writes to objects: the sidecar's lease renewal
// and the reviews that authorize the bench's metrics scrape are not writes
// of what it reconciles, anything else is.
func TestObjectWritesLeaveOutHousekeeping(t *testing.T) {
	key := func(resource, subresource, verb string) string {
		return `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="` + resource +
			`",scope="namespace",subresource="` + subresource + `",verb="` + verb + `",version="v1"}`
	}
	before := metrics{key("leases", "", "PUT"): 10, key("gitopsdeployments", "status", "PATCH"): 5}
	after := metrics{
		key("leases", "", "PUT"):                    14,
		key("tokenreviews", "", "POST"):             2,
		key("subjectaccessreviews", "", "POST"):     2,
		key("gitopsdeployments", "status", "PATCH"): 5,
		key("applications", "", "GET"):              40,
	}
	if n := objectWrites(before, after); n != 0 {
		t.Fatalf("housekeeping and reads counted as %v object writes, want 0", n)
	}
	after[key("gitopsdeployments", "status", "PATCH")] = 7
	after[key("appprojects", "", "APPLY")] = 1
	if n := objectWrites(before, after); n != 3 {
		t.Fatalf("object writes = %v, want 3 (2 status patches and an apply)", n)
	}
}
