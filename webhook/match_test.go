package webhook

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Admission contract, "matching": the selector meets the new template's
// labels or the old one's.
func TestMatchPolicies(t *testing.T) {
	settle := settlePolicy()
	expr := settlePolicy(func(p *rgv1.ConsumerRetentionPolicy) {
		p.Name, p.UID = "by-expression", "uid-expr"
		p.Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"batch", "settle"}},
		}}
	})
	broken := settlePolicy(func(p *rgv1.ConsumerRetentionPolicy) {
		p.Name, p.UID = "broken", "uid-broken"
		p.Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn}, // In without values does not parse
		}}
	})
	policies := []*rgv1.ConsumerRetentionPolicy{settle, expr, broken}

	cases := []struct {
		name     string
		cur, old map[string]string
		want     []string
	}{
		{"new labels match", map[string]string{"app": "settle", "v": "2"}, map[string]string{"app": "settle"}, []string{"ledger-settle-consumer"}},
		{"label dropped: the old labels still match", map[string]string{"v": "2"}, map[string]string{"app": "settle"}, []string{"ledger-settle-consumer"}},
		{"label added: the new labels match", map[string]string{"app": "settle"}, map[string]string{}, []string{"ledger-settle-consumer"}},
		{"expression selector", map[string]string{"tier": "batch"}, map[string]string{"tier": "batch"}, []string{"by-expression"}},
		{"both", map[string]string{"app": "settle", "tier": "settle"}, nil, []string{"ledger-settle-consumer", "by-expression"}},
		{"unguarded workload", map[string]string{"app": "web"}, map[string]string{"app": "web"}, nil},
		{"no labels at all", nil, nil, nil},
	}
	sc := newSelectorCache()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			matched, invalid := matchPolicies(sc, policies, tc.cur, tc.old)
			var got []string
			for _, p := range matched {
				got = append(got, p.Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("matched %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("matched %v, want %v", got, tc.want)
				}
			}
			if len(invalid) != 1 || invalid[0].Name != "broken" {
				t.Errorf("invalid = %v, want the policy whose selector does not parse", invalid)
			}
		})
	}
}

// Parsed selectors are reused while the policy's generation stays (status
// writes move only resourceVersion), re-parsed when the spec moves it, and
// dropped when the policy is deleted.
func TestSelectorCacheFollowsGeneration(t *testing.T) {
	sc := newSelectorCache()
	p := settlePolicy()
	s1, err := sc.selector(p)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := sc.selector(p)
	if s1.String() != s2.String() || sc.len() != 1 {
		t.Fatalf("second lookup: %v / %d entries", s2, sc.len())
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = sc.selector(p) })
	if allocs != 0 {
		t.Errorf("a cached lookup allocates %v times, want 0", allocs)
	}

	statusWrite := p.DeepCopy()
	statusWrite.ResourceVersion = p.ResourceVersion + "1"
	if allocs := testing.AllocsPerRun(100, func() { _, _ = sc.selector(statusWrite) }); allocs != 0 {
		t.Errorf("a lookup after a status write (same generation) allocates %v times: the selector was parsed again", allocs)
	}

	changed := p.DeepCopy()
	changed.Generation = p.Generation + 1
	changed.ResourceVersion = "2"
	changed.Spec.Selector.MatchLabels = map[string]string{"app": "settle-v2"}
	s3, _ := sc.selector(changed)
	if s3.String() != "app=settle-v2" {
		t.Errorf("after a new generation the selector is %q, want app=settle-v2", s3)
	}
	if sc.len() != 1 {
		t.Errorf("%d entries for one policy", sc.len())
	}
	sc.forget(p.UID)
	if sc.len() != 0 {
		t.Errorf("forget left %d entries", sc.len())
	}
}
