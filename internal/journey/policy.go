package journey

import "github.com/latchkey/latchkey/internal/cimconfig"

func isPolicy(err error) bool { return cimconfig.IsPolicyError(err) }
