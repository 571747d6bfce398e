package kernel

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Clock is the one clock of the reconcilers; tests set it, nil is the wall clock.
type Clock func() time.Time

// Now is the time of conditions and status fields.
func (c Clock) Now() metav1.Time {
	if c == nil {
		return metav1.Now()
	}
	return metav1.NewTime(c())
}
