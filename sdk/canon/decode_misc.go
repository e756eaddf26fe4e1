package canon

// DecodeJSON resets x and fills it from canonical JSON.
func (x *EmbeddingRequest) DecodeJSON(data []byte) error {
	*x = EmbeddingRequest{}
	return decode("embedding request", data, x.decode)
}

func (x *EmbeddingRequest) decode(v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "model":
			x.Model, err = getString(v)
		case "input":
			x.Input, err = getStrings(v)
		case "dimensions":
			x.Dimensions, err = getInt(v)
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

func (x *EmbeddingResponse) decode(v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "model":
			x.Model, err = getString(v)
		case "vectors":
			x.Vectors, err = slice(v, func(vec *[]float32, v *jv) (err error) {
				*vec, err = getFloat32s(v)
				return err
			})
		case "usage":
			x.Usage, err = getUsage(v)
		}
		return err
	})
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *Error) DecodeJSON(data []byte) error {
	*x = Error{}
	return decode("error", data, x.decode)
}

func (x *Error) decode(v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "status":
			x.Status, err = getInt(v)
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

func (x *ModelList) decode(v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		if string(k) == "models" {
			x.Models, err = slice(v, (*Model).decode)
		}
		return err
	})
}

func (m *Model) decode(v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "id":
			m.ID, err = getString(v)
		case "owned_by":
			m.OwnedBy, err = getString(v)
		case "created":
			m.Created, _, err = getInt64(v)
		case "context_length":
			m.ContextLength, err = getInt(v)
		}
		return err
	})
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *Discovery) DecodeJSON(data []byte) error {
	*x = Discovery{}
	return decode("discovery", data, x.decode)
}

func (x *Discovery) decode(v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "healthy":
			x.Healthy, err = getBoolPtr(v)
		case "models":
			x.Models, err = slice(v, (*DiscoveredModel).decode)
		case "version":
			x.Version, err = getString(v)
		case "has_load":
			x.HasLoad, err = getBool(v)
		case "running":
			x.Running, _, err = getFloat(v, 64)
		case "waiting":
			x.Waiting, _, err = getFloat(v, 64)
		case "kv_cache_usage":
			x.KVCacheUsage, _, err = getFloat(v, 64)
		}
		return err
	})
}

func (m *DiscoveredModel) decode(v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "name":
			m.Name, err = getString(v)
		case "loaded":
			m.Loaded, err = getBool(v)
		case "context_length":
			m.ContextLength, err = getInt(v)
		case "size_bytes":
			m.SizeBytes, _, err = getInt64(v)
		case "family":
			m.Family, err = getString(v)
		case "capabilities":
			m.Capabilities, err = getStrings(v)
		}
		return err
	})
}
