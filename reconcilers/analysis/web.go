package analysis

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// maxBody bounds what is read of an answer.
const maxBody = 1 << 20

// httpClient connects only to addresses a.Egress allows, follows a redirect
// only to the same scheme, host and port, and sends c only to u's host over https.
func httpClient(a Access, u *url.URL, c *creds) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // a proxy would dial for us, past the egress check
		DialContext:         a.Egress.DialContext(&net.Dialer{Timeout: Timeout}),
		TLSClientConfig:     &tls.Config{RootCAs: a.Roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: Timeout,
		DisableKeepAlives:   true, // one request a measurement: nothing to keep
	}
	return &http.Client{
		Transport:     &authenticated{next: tr, host: u.Host, creds: c},
		CheckRedirect: sameOrigin,
	}
}

// sameOrigin follows a redirect only to the same scheme, host and port (as
// gitprobe does); not followed, the redirect's status is the answer.
func sameOrigin(r *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) >= 5 || r.URL.Scheme != first.Scheme || r.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// getWeb GETs the check's URL and judges the answer's status and, when the
// check names one, a field of its JSON body.
func getWeb(ctx context.Context, a Access, check as.WebCheck, c *creds) Measurement {
	u, err := url.Parse(check.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Measurement{Message: "the URL is not an http or https URL"}
	}
	if !c.empty() && u.Scheme != "https" {
		return Measurement{Message: "credentials are only sent over https"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, check.URL, nil)
	if err != nil {
		return Measurement{Message: "the URL is not an http or https URL"}
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	resp, err := httpClient(a, u, c).Do(req)
	if err != nil {
		return Measurement{Message: describe(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return Measurement{Value: strconv.Itoa(resp.StatusCode), Message: "the answer could not be read: " + describe(err)}
	}
	return judgeAnswer(check, resp.StatusCode, body)
}

// judgeAnswer is the verdict on an answer: its status, then the JSON field.
// The message quotes only the status and the field's value.
func judgeAnswer(check as.WebCheck, status int, body []byte) Measurement {
	want := int(check.ExpectedStatus)
	if want == 0 {
		want = http.StatusOK
	}
	if status != want {
		return Measurement{Value: strconv.Itoa(status), Message: fmt.Sprintf("HTTP status %d, expected %d", status, want)}
	}
	if check.JSONField == "" {
		return Measurement{OK: true, Value: strconv.Itoa(status), Message: fmt.Sprintf("HTTP status %d", status)}
	}
	if check.SuccessCondition == nil {
		return Measurement{Value: strconv.Itoa(status), Message: "jsonField is set without a successCondition"}
	}
	if len(body) > maxBody {
		return Measurement{Message: fmt.Sprintf("the answer is larger than %d bytes", maxBody)}
	}
	v, err := Field(body, check.JSONField)
	if err != nil {
		return Measurement{Message: err.Error()}
	}
	ok, err := Compare(v, *check.SuccessCondition)
	switch {
	case err != nil:
		return Measurement{Value: v, Message: err.Error()}
	case !ok:
		return Measurement{Value: v, Message: fmt.Sprintf("%s is %s, not %s %s", check.JSONField, short(v), check.SuccessCondition.Operator, check.SuccessCondition.Value)}
	}
	return Measurement{OK: true, Value: v, Message: fmt.Sprintf("%s is %s", check.JSONField, short(v))}
}

// Field is the value of a JSON document's field at path (keys and array
// indexes separated by dots) as text: a number as written, a string as is,
// true, false or null. An object or an array is not a value.
func Field(doc []byte, path string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("the answer is not JSON")
	}
	for _, key := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[key]
			if !ok {
				return "", fmt.Errorf("the answer has no field %s", path)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(node) {
				return "", fmt.Errorf("the answer has no field %s", path)
			}
			v = node[i]
		default:
			return "", fmt.Errorf("the answer has no field %s", path)
		}
	}
	switch t := v.(type) {
	case json.Number:
		return t.String(), nil
	case string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case nil:
		return "null", nil
	default:
		return "", fmt.Errorf("field %s is an object or an array, not a value", path)
	}
}

// short quotes a value for a message, cut at maxValue.
func short(v string) string { return strconv.Quote(cut(v, maxValue)) }
