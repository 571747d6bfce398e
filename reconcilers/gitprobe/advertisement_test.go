package gitprobe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pkt(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		if l == "" {
			b.WriteString("0000")
			continue
		}
		fmt.Fprintf(&b, "%04x%s", len(l)+4, l)
	}
	return b.String()
}

func TestParseAdvertisementPeelsAnnotatedTags(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	got, err := parseAdvertisement(strings.NewReader(pkt("# service=git-upload-pack\n", "",
		a+" HEAD\x00multi_ack symref=HEAD:refs/heads/main\n", a+" refs/heads/main\n",
		b+" refs/tags/v1\n", c+" refs/tags/v1^{}\n", "")))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"HEAD": a, "refs/heads/main": a, "refs/tags/v1": c}, got)
}

func TestParseAdvertisementOfAnEmptyRepository(t *testing.T) {
	got, err := parseAdvertisement(strings.NewReader(pkt("# service=git-upload-pack\n", "",
		strings.Repeat("0", 40)+" capabilities^{}\x00agent=git\n", "")))
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestParseAdvertisementRefusesWhatIsNotOne(t *testing.T) {
	for _, body := range []string{
		"<html>hello</html>",
		pkt("# service=git-upload-pack\n", "", "not-an-id refs/heads/main\n", ""),
		pkt("hello\n", ""),
		pkt("# service=git-upload-pack\n", "", strings.Repeat("a", 40)+" refs/heads/main\n"), // no final flush
	} {
		_, err := parseAdvertisement(strings.NewReader(body))
		assert.Error(t, err, body)
	}
}
