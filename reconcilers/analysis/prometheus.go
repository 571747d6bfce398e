package analysis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
)

// queryPrometheus runs the check's instant query at now with Prometheus' own
// API client. The query goes as a form value (it changes no request's
// structure); an error the server sends is reported by its type only.
func queryPrometheus(ctx context.Context, a Access, check as.PrometheusCheck, c *creds, now time.Time) Measurement {
	u, err := url.Parse(check.Address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Measurement{Message: "the address is not an http or https URL"}
	}
	if !c.empty() && u.Scheme != "https" {
		return Measurement{Message: "credentials are only sent over https"}
	}
	client, err := promapi.NewClient(promapi.Config{Address: check.Address, Client: httpClient(a, u, c)})
	if err != nil {
		return Measurement{Message: "the address is not an http or https URL"}
	}
	v, _, err := promv1.NewAPI(client).Query(ctx, check.Query, now, promv1.WithTimeout(Timeout))
	if err != nil {
		return Measurement{Message: "query failed: " + describeQueryError(err)}
	}
	return judgeSamples(v, check.SuccessCondition)
}

// describeQueryError names a failed query in fixed words: the API's error
// type (bad_data for a query Prometheus refused), an HTTP status class, or
// the connection failure; never the server's message.
func describeQueryError(err error) string {
	var apiErr *promv1.Error
	if errors.As(err, &apiErr) {
		switch apiErr.Type {
		case promv1.ErrBadData:
			return "Prometheus refused the query (bad_data)"
		case promv1.ErrClient:
			return "Prometheus answered with a client error (4xx): check the address and credentials"
		case promv1.ErrServer:
			return "Prometheus answered with a server error (5xx)"
		case promv1.ErrBadResponse:
			return "the answer is not Prometheus' query API"
		default:
			return "Prometheus answered " + string(apiErr.Type)
		}
	}
	return describe(err)
}

// describe turns a connection failure into fixed words.
func describe(err error) string {
	if k := netfailure.Classify(err); k == netfailure.Timeout {
		return fmt.Sprintf("timeout: no answer within %s", Timeout)
	} else {
		return k.String()
	}
}

// judgeSamples applies cond to a query's value: a scalar, or every sample
// of a vector (an empty one has no value to judge). The value kept is the
// first sample that fails, else the first.
func judgeSamples(v model.Value, cond as.AnalysisCondition) Measurement {
	var values []float64
	switch t := v.(type) {
	case *model.Scalar:
		values = []float64{float64(t.Value)}
	case model.Vector:
		for _, s := range t {
			values = append(values, float64(s.Value))
		}
	default:
		return Measurement{Message: "the query returned a " + typeName(v) + ", not a scalar or an instant vector"}
	}
	if len(values) == 0 {
		return Measurement{Message: "the query returned no sample"}
	}
	for _, f := range values {
		s := strconv.FormatFloat(f, 'g', -1, 64)
		ok, err := Compare(s, cond)
		if err != nil {
			return Measurement{Value: s, Message: err.Error()}
		}
		if !ok {
			return Measurement{Value: s, Message: fmt.Sprintf("%s is not %s %s", s, cond.Operator, cond.Value)}
		}
	}
	s := strconv.FormatFloat(values[0], 'g', -1, 64)
	msg := fmt.Sprintf("%s %s %s", s, cond.Operator, cond.Value)
	if len(values) > 1 {
		msg = fmt.Sprintf("%d samples %s %s", len(values), cond.Operator, cond.Value)
	}
	return Measurement{OK: true, Value: s, Message: msg}
}

func typeName(v model.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().String()
}
