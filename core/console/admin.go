package console

// adminPages register the administrators' pages: each admin_*.go file
// appends its registration in an init function, so those pages live in
// files of their own; adminNav are their links in the top bar, in order.
var (
	adminPages []func(c *Console)
	adminNav   []NavLink
)

// NavLink is a link of the admin navigation: Path is relative to the
// prefix ("admin/queue"), shown to sessions holding Need.
type NavLink struct {
	Path, Label string
	Need        Role
}

func (c *Console) registerAdmin() {
	for _, reg := range adminPages {
		reg(c)
	}
}

// AdminNav is the admin links the session may follow.
func (rq *Request) AdminNav() []NavLink {
	var out []NavLink
	for _, l := range adminNav {
		if rq.holds(l.Need) {
			out = append(out, l)
		}
	}
	return out
}
