package runner

import "proctor/models"

// EpisodeToken in a configured site URL is replaced by the attempt's
// namespace (models.EpisodeToken).
const EpisodeToken = models.EpisodeToken
