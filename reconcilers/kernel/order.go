package kernel

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Older says whether a came before b: by creation time, then by name (times
// have seconds). The one order of "who came first" among objects of a kind:
// the run that goes first, the binding or credential that wins a tie.
func Older(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}
