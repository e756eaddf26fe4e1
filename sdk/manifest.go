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

// AdapterFor returns the index and manifest of the first adapter component
// whose Format is format.
func (m Manifest) AdapterFor(format string) (uint16, Manifest, bool) {
	if m.Kind != KindBundle {
		return 0, m, m.Kind == KindAdapter && m.Format == format
	}
	for i := range m.Components {
		if c := &m.Components[i]; c.Kind == KindAdapter && c.Format == format {
			return uint16(i), *c, true
		}
	}
	return 0, Manifest{}, false
}

// PartNamed returns the index and manifest of the component named name.
func (m Manifest) PartNamed(name string) (uint16, Manifest, bool) {
	if m.Kind != KindBundle {
		return 0, m, m.Name == name
	}
	for i := range m.Components {
		if m.Components[i].Name == name {
			return uint16(i), m.Components[i], true
		}
	}
	return 0, Manifest{}, false
}
