package webhookscope

import "testing"

func TestExpression(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want string
	}{
		{"no policy guards nothing", nil, `request.namespace in []`},
		{"one namespace", []string{"orders"}, `request.namespace in ["orders"]`},
		{"sorted and deduplicated, so the same policies give the same expression",
			[]string{"settlement", "orders", "settlement", ""}, `request.namespace in ["orders", "settlement"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expression(tc.in); got != tc.want {
				t.Errorf("Expression(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}
