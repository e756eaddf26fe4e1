package canon

// DecodeJSON resets x and fills it from canonical JSON.
func (x *EmbeddingRequest) DecodeJSON(data []byte) error {
	*x = EmbeddingRequest{}
	return decode("embedding request", data, x.decode)
}

func (x *EmbeddingRequest) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "model":
			x.Model, err = getString(v)
		case "input":
			x.Input, err = getStrings(d, v)
		case "dimensions":
			x.Dimensions, err = getInt(d, v)
		case "encoding_format":
			x.EncodingFormat, err = getString(v)
		case "user":
			x.User, err = getString(v)
		}
		return err
	})
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *EmbeddingResponse) DecodeJSON(data []byte) error {
	*x = EmbeddingResponse{}
	return decode("embedding response", data, x.decode)
}

func (x *EmbeddingResponse) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "model":
			x.Model, err = getString(v)
		case "vectors":
			x.Vectors, err = slice(d, v, func(vec *[]float32, d *decoder, v *jv) (err error) {
				*vec, err = getFloat32s(d, v)
				return err
			})
		case "usage":
			x.Usage, err = getUsage(d, v)
		}
		return err
	})
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *Error) DecodeJSON(data []byte) error {
	*x = Error{}
	return decode("error", data, x.decode)
}

func (x *Error) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "status":
			x.Status, err = getInt(d, v)
		case "type":
			var s string
			s, err = getString(v)
			x.Type = ErrorType(s)
		case "code":
			x.Code, err = getString(v)
		case "message":
			x.Message, err = getString(v)
		case "param":
			x.Param, err = getString(v)
		case "request_id":
			x.RequestID, err = getString(v)
		}
		return err
	})
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ModelList) DecodeJSON(data []byte) error {
	*x = ModelList{}
	return decode("model list", data, x.decode)
}

func (x *ModelList) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		if string(k) == "models" {
			x.Models, err = slice(d, v, (*Model).decode)
		}
		return err
	})
}

func (m *Model) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "id":
			m.ID, err = getString(v)
		case "owned_by":
			m.OwnedBy, err = getString(v)
		case "created":
			m.Created, _, err = getInt64(d, v)
		case "context_length":
			m.ContextLength, err = getInt(d, v)
		}
		return err
	})
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *Discovery) DecodeJSON(data []byte) error {
	*x = Discovery{}
	return decode("discovery", data, x.decode)
}

func (x *Discovery) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "healthy":
			x.Healthy, err = getBoolPtr(v)
		case "models":
			x.Models, err = slice(d, v, (*DiscoveredModel).decode)
		case "version":
			x.Version, err = getString(v)
		case "has_load":
			x.HasLoad, err = getBool(v)
		case "running":
			x.Running, _, err = getFloat(d, v, 64)
		case "waiting":
			x.Waiting, _, err = getFloat(d, v, 64)
		case "kv_cache_usage":
			x.KVCacheUsage, _, err = getFloat(d, v, 64)
		}
		return err
	})
}

func (m *DiscoveredModel) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "name":
			m.Name, err = getString(v)
		case "loaded":
			m.Loaded, err = getBool(v)
		case "context_length":
			m.ContextLength, err = getInt(d, v)
		case "size_bytes":
			m.SizeBytes, _, err = getInt64(d, v)
		case "family":
			m.Family, err = getString(v)
		case "capabilities":
			m.Capabilities, err = getStrings(d, v)
		}
		return err
	})
}
