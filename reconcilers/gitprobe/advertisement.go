package gitprobe

import (
	"errors"
	"io"
	"strconv"
	"strings"
)

// maxAdvertisement bounds the refs read from one repository.
const maxAdvertisement = 8 << 20

var errNotAdvertisement = errors.New("not a git ref advertisement")

// parseAdvertisement reads the pkt-lines of a smart-HTTP ref advertisement
// (protocol v0/v1): "# service=..." and a flush, then "<oid> <ref>" lines
// (the first with capabilities after a NUL) up to a flush. A peeled line
// "<oid> <tag>^{}" gives the commit of an annotated tag and replaces the tag
// object's id.
func parseAdvertisement(r io.Reader) (map[string]string, error) {
	refs := map[string]string{}
	flushes := 0
	for flushes < 2 {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return nil, errNotAdvertisement
		}
		n, err := strconv.ParseUint(string(size[:]), 16, 16)
		if err != nil || (n > 0 && n < 4) {
			return nil, errNotAdvertisement
		}
		if n == 0 {
			flushes++
			continue
		}
		line := make([]byte, n-4)
		if _, err := io.ReadFull(r, line); err != nil {
			return nil, errNotAdvertisement
		}
		text := strings.TrimSuffix(string(line), "\n")
		if flushes == 0 {
			if !strings.HasPrefix(text, "# service=") {
				return nil, errNotAdvertisement
			}
			continue
		}
		text, _, _ = strings.Cut(text, "\x00")
		// An empty repository advertises only "<zeros> capabilities^{}".
		if strings.HasPrefix(text, "version ") || strings.HasSuffix(text, " capabilities^{}") {
			continue
		}
		oid, name, ok := strings.Cut(text, " ")
		if !ok || !isObjectID(oid) {
			return nil, errNotAdvertisement
		}
		if tag, peeled := strings.CutSuffix(name, "^{}"); peeled {
			refs[tag] = oid
			continue
		}
		if _, seen := refs[name]; !seen {
			refs[name] = oid
		}
	}
	return refs, nil
}

// isObjectID: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
