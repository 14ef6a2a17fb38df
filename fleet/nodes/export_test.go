package nodes

// RoomOrPlatformMoved is roomOrPlatformMoved, for the tests.
var RoomOrPlatformMoved = roomOrPlatformMoved
