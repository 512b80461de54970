package storemetrics

// op is a store operation: a JobStore method, or a capability's.
type op int

const (
	opEnqueue op = iota
	opGet
	opList
	opCancel
	opAddNote
	opAddRerun
	opJobSecrets
	opDequeue
	opHeartbeat
	opComplete
	opRelease
	opExpireLeases
	opAppend
	opReadStored
	opCreateKey
	opKeyByHash
	opListKeys
	opRevokeKey
	opTouchKey
	opSpendOnce
	opSpent
	opCreateScatter
	opGetScatter
	opListScatters
	opUpdateScatter
	opScatterBatch
	opIngest
	opAccepted
	opReplaceLog
	opQueueStats
	opEndedPerMinute
	opSetQueuePaused
	opQueuePaused
	opDeleteJob
	opEndedBefore
	opFinish
	opDequeueUnpaused
	opGraceLeases
	opReclaimSpace
	opPing
	opSharePollers
	opSharedPollers
	opPromoteScheduled
	opSetQueueMaxRunning
	opCreateSchedule
	opGetSchedule
	opListSchedules
	opUpdateSchedule
	opDeleteSchedule
	opClaimNotifications
	opRecordDeliveries
	numOps
)

// opNames are the operations as the metrics name them: the method's name
// in snake case.
var opNames = [numOps]string{
	opEnqueue:         "enqueue",
	opGet:             "get",
	opList:            "list",
	opCancel:          "cancel",
	opAddNote:         "add_note",
	opAddRerun:        "add_rerun",
	opJobSecrets:      "job_secrets",
	opDequeue:         "dequeue",
	opHeartbeat:       "heartbeat",
	opComplete:        "complete",
	opRelease:         "release",
	opExpireLeases:    "expire_leases",
	opAppend:          "append",
	opReadStored:      "read_stored",
	opCreateKey:       "create_key",
	opKeyByHash:       "key_by_hash",
	opListKeys:        "list_keys",
	opRevokeKey:       "revoke_key",
	opTouchKey:        "touch_key",
	opSpendOnce:       "spend_once",
	opSpent:           "spent",
	opCreateScatter:   "create_scatter",
	opGetScatter:      "get_scatter",
	opListScatters:    "list_scatters",
	opUpdateScatter:   "update_scatter",
	opScatterBatch:    "scatter_batch",
	opIngest:          "ingest",
	opAccepted:        "accepted",
	opReplaceLog:      "replace_log",
	opQueueStats:      "queue_stats",
	opEndedPerMinute:  "ended_per_minute",
	opSetQueuePaused:  "set_queue_paused",
	opQueuePaused:     "queue_paused",
	opDeleteJob:       "delete_job",
	opEndedBefore:     "ended_before",
	opFinish:          "finish",
	opDequeueUnpaused: "dequeue_unpaused",
	opGraceLeases:     "grace_leases",
	opReclaimSpace:    "reclaim_space",
	opPing:            "ping",
	opSharePollers:    "share_pollers",
	opSharedPollers:   "shared_pollers",

	opPromoteScheduled:   "promote_scheduled",
	opSetQueueMaxRunning: "set_queue_max_running",
	opCreateSchedule:     "create_schedule",
	opGetSchedule:        "get_schedule",
	opListSchedules:      "list_schedules",
	opUpdateSchedule:     "update_schedule",
	opDeleteSchedule:     "delete_schedule",
	opClaimNotifications: "claim_notifications",
	opRecordDeliveries:   "record_deliveries",
}
