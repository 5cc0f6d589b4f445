package mid

import _ "example.com/m/internal/story"
