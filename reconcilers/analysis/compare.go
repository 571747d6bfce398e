package analysis

import (
	"fmt"
	"math"
	"strconv"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// Compare applies cond to a measured value: as numbers when both are
// numbers, else as text, where only == and != apply. NaN meets only !=.
func Compare(value string, cond as.AnalysisCondition) (bool, error) {
	a, errA := strconv.ParseFloat(value, 64)
	b, errB := strconv.ParseFloat(cond.Value, 64)
	if errA == nil && errB == nil {
		if math.IsNaN(a) || math.IsNaN(b) {
			return cond.Operator == as.AnalysisNotEqual, nil
		}
		switch cond.Operator {
		case as.AnalysisLessThan:
			return a < b, nil
		case as.AnalysisLessThanOrEqual:
			return a <= b, nil
		case as.AnalysisGreaterThan:
			return a > b, nil
		case as.AnalysisGreaterThanOrEqual:
			return a >= b, nil
		case as.AnalysisEqual:
			return a == b, nil
		case as.AnalysisNotEqual:
			return a != b, nil
		}
		return false, fmt.Errorf("unknown operator %q", cond.Operator)
	}
	switch cond.Operator {
	case as.AnalysisEqual:
		return value == cond.Value, nil
	case as.AnalysisNotEqual:
		return value != cond.Value, nil
	case as.AnalysisLessThan, as.AnalysisLessThanOrEqual, as.AnalysisGreaterThan, as.AnalysisGreaterThanOrEqual:
		if errB != nil {
			return false, fmt.Errorf("%s compares numbers: the condition's value %s is not a number", cond.Operator, short(cond.Value))
		}
		return false, fmt.Errorf("%s compares numbers: the value %s is not a number", cond.Operator, short(value))
	}
	return false, fmt.Errorf("unknown operator %q", cond.Operator)
}
