package direct

import _ "example.com/m/internal/story"
