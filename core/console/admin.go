package console

// adminPages register the administrators' pages: each admin_*.go file
// appends its registration in an init function, so those pages live in
// files of their own.
var adminPages []func(c *Console)

func (c *Console) registerAdmin() {
	for _, reg := range adminPages {
		reg(c)
	}
}
