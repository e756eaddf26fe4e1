package sdk

// Parts returns the components a manifest describes: a bundle's
// Components, or the manifest itself for a module of one component. The
// index of a part is the component index calls name in their header.
func (m Manifest) Parts() []Manifest {
	if m.Kind == KindBundle {
		return m.Components
	}
	return []Manifest{m}
}

// Part returns component i (see Parts) without allocating.
func (m Manifest) Part(i uint16) (Manifest, bool) {
	if m.Kind != KindBundle {
		if i == 0 {
			return m, true
		}
		return Manifest{}, false
	}
	if int(i) < len(m.Components) {
		return m.Components[i], true
	}
	return Manifest{}, false
}
