package stats

// BinaryMetrics are the classification metrics of a prediction (an LLM judge)
// against a reference (the human majority) on a two-class label, as
// AgentRewardBench reports them: precision, recall, F1, accuracy, negative
// predictive value and true negative rate, with the positive class chosen by
// the caller ("successful" for task success).
//
// A metric whose denominator is zero is nil, never 0 or NaN: precision when the
// judge never said positive, recall when the reference has no positive, NPV
// when the judge never said negative, TNR when the reference has no negative,
// F1 when neither has a positive, accuracy when there is no item.
// AgentRewardBench's scoring script prints 0 in those cases; read nil as 0 to
// compare with its tables.
type BinaryMetrics struct {
	TP int `json:"tp"` // reference positive, predicted positive
	FP int `json:"fp"` // reference negative, predicted positive
	FN int `json:"fn"` // reference positive, predicted negative
	TN int `json:"tn"` // reference negative, predicted negative

	Precision *float64 `json:"precision"` // TP / (TP + FP)
	Recall    *float64 `json:"recall"`    // TP / (TP + FN), the true positive rate
	// F1 is 2·TP / (2·TP + FP + FN): the harmonic mean of precision and recall
	// when both exist, and also defined (as 0) when one of them does not but
	// some item is positive on either side, because then TP is 0.
	F1       *float64 `json:"f1"`
	Accuracy *float64 `json:"accuracy"` // (TP + TN) / n
	NPV      *float64 `json:"npv"`      // TN / (TN + FN)
	TNR      *float64 `json:"tnr"`      // TN / (TN + FP), the specificity
}

// Binary computes BinaryMetrics from the four cells of a 2×2 table. Negative
// counts are taken as 0.
func Binary(tp, fp, fn, tn int) BinaryMetrics {
	tp, fp, fn, tn = max(tp, 0), max(fp, 0), max(fn, 0), max(tn, 0)
	return BinaryMetrics{
		TP: tp, FP: fp, FN: fn, TN: tn,
		Precision: fraction(tp, tp+fp),
		Recall:    fraction(tp, tp+fn),
		F1:        fraction(2*tp, 2*tp+fp+fn),
		Accuracy:  fraction(tp+tn, tp+fp+fn+tn),
		NPV:       fraction(tn, tn+fn),
		TNR:       fraction(tn, tn+fp),
	}
}

// N is the number of items in the table.
func (m BinaryMetrics) N() int { return m.TP + m.FP + m.FN + m.TN }

// fraction is num/den, or nil when den is 0.
func fraction(num, den int) *float64 {
	if den == 0 {
		return nil
	}
	r := float64(num) / float64(den)
	return &r
}
