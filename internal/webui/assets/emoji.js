// Emoji shortcodes (:rocket:) as the section headers of Buildkite logs
// use them, for the names people write most: the Unicode ones of GitHub's
// and Slack's set. A name not here stays as written, so a header with a
// shortcode this table lacks reads as it was printed.
const EMOJI = {
  "+1": "👍", "-1": "👎", "100": "💯", "1234": "🔢",
  abc: "🔤", airplane: "✈️", alarm_clock: "⏰", alembic: "⚗️", alien: "👽", ambulance: "🚑", anchor: "⚓", ant: "🐜",
  apple: "🍎", arrow_down: "⬇️", arrow_forward: "▶️", arrow_heading_down: "⤵️", arrow_heading_up: "⤴️", arrow_left: "⬅️",
  arrow_right: "➡️", arrow_right_hook: "↪️", arrow_up: "⬆️", arrows_clockwise: "🔃", arrows_counterclockwise: "🔄", art: "🎨",
  atom_symbol: "⚛️", axe: "🪓", balloon: "🎈", ballot_box_with_check: "☑️", bangbang: "‼️", bar_chart: "📊", battery: "🔋",
  bee: "🐝", beer: "🍺", beers: "🍻", beetle: "🐞", beginner: "🔰", bell: "🔔", bento: "🍱", bike: "🚲", biohazard: "☣️",
  bird: "🐦", black_circle: "⚫", black_nib: "✒️", blue_heart: "💙", blush: "😊", bomb: "💣", book: "📖", bookmark: "🔖",
  bookmark_tabs: "📑", books: "📚", boom: "💥", bow_and_arrow: "🏹", brain: "🧠", briefcase: "💼", broken_heart: "💔",
  broom: "🧹", bricks: "🧱", bug: "🐛", building_construction: "🏗️", bulb: "💡", bullettrain_front: "🚅", bus: "🚌",
  butterfly: "🦋", cactus: "🌵", cake: "🍰", calendar: "📆", camel: "🐫", camera: "📷", candle: "🕯️", card_file_box: "🗃️",
  card_index: "📇", cat: "🐱", cd: "💿", chains: "⛓️", chart_with_downwards_trend: "📉", chart_with_upwards_trend: "📈",
  checkered_flag: "🏁", cherries: "🍒", chicken: "🐔", christmas_tree: "🎄", clap: "👏", clipboard: "📋", clock1: "🕐",
  closed_lock_with_key: "🔐", cloud: "☁️", clown_face: "🤡", coffee: "☕", compass: "🧭", computer: "💻", confetti_ball: "🎊",
  confused: "😕", construction: "🚧", construction_worker: "👷", cookie: "🍪", cool: "🆒", cow: "🐮", cow2: "🐄", crab: "🦀",
  crossed_fingers: "🤞", crossed_swords: "⚔️", crown: "👑", cry: "😢", crystal_ball: "🔮", cupcake: "🧁", cyclone: "🌀",
  dagger: "🗡️", dart: "🎯", dash: "💨", date: "📅", desktop_computer: "🖥️", dizzy: "💫", dna: "🧬", dog: "🐶", dog2: "🐕",
  dollar: "💵", dolphin: "🐬", door: "🚪", dove: "🕊️", dragon: "🐉", droplet: "💧", duck: "🦆", eagle: "🦅", earth_africa: "🌍",
  earth_americas: "🌎", earth_asia: "🌏", egg: "🥚", electric_plug: "🔌", elephant: "🐘", email: "📧", envelope: "✉️",
  evergreen_tree: "🌲", exclamation: "❗", eyes: "👀", face_with_monocle: "🧐", factory: "🏭", fast_forward: "⏩",
  file_cabinet: "🗄️", file_folder: "📁", fire: "🔥", fire_engine: "🚒", fire_extinguisher: "🧯", fireworks: "🎆", fish: "🐟",
  fist: "✊", flags: "🎏", flashlight: "🔦", floppy_disk: "💾", flying_saucer: "🛸", fog: "🌫️", four_leaf_clover: "🍀",
  fox_face: "🦊", free: "🆓", frog: "🐸", gear: "⚙️", gem: "💎", ghost: "👻", gift: "🎁", globe_with_meridians: "🌐",
  goat: "🐐", golf: "⛳", gorilla: "🦍", grapes: "🍇", green_apple: "🍏", green_book: "📗", green_circle: "🟢",
  green_heart: "💚", grey_question: "❔", grimacing: "😬", grin: "😁", grinning: "😀", guardsman: "💂", hamburger: "🍔",
  hammer: "🔨", hammer_and_pick: "⚒️", hammer_and_wrench: "🛠️", hamster: "🐹", hand: "✋", handshake: "🤝", hatching_chick: "🐣",
  headphones: "🎧", heart: "❤️", heart_eyes: "😍", heavy_check_mark: "✔️", heavy_dollar_sign: "💲", heavy_minus_sign: "➖",
  heavy_multiplication_x: "✖️", heavy_plus_sign: "➕", helicopter: "🚁", herb: "🌿", hedgehog: "🦔", hocho: "🔪", honeybee: "🐝",
  horse: "🐴", hospital: "🏥", hot_pepper: "🌶️", hotdog: "🌭", hourglass: "⌛", hourglass_flowing_sand: "⏳", house: "🏠",
  hugs: "🤗", ice_cream: "🍨", id: "🆔", inbox_tray: "📥", infinity: "♾️", information_source: "ℹ️", iphone: "📱",
  jack_o_lantern: "🎃", jigsaw: "🧩", joy: "😂", key: "🔑", keyboard: "⌨️", kiwi_fruit: "🥝", koala: "🐨", label: "🏷️",
  ladder: "🪜", large_blue_circle: "🔵", large_blue_diamond: "🔷", large_orange_diamond: "🔶", laughing: "😆", leaves: "🍃",
  ledger: "📒", lemon: "🍋", leopard: "🐆", level_slider: "🎚️", light_rail: "🚈", link: "🔗", lion: "🦁", lipstick: "💄",
  lizard: "🦎", lock: "🔒", lock_with_ink_pen: "🔏", lollipop: "🍭", loudspeaker: "📢", mag: "🔍", mag_right: "🔎",
  magnet: "🧲", mailbox: "📫", mailbox_with_mail: "📬", mammoth: "🦣", man_technologist: "👨‍💻", maple_leaf: "🍁",
  mask: "😷", mate: "🧉", medal_military: "🎖️", medal_sports: "🏅", mega: "📣", memo: "📝", microphone: "🎤", microscope: "🔬",
  milky_way: "🌌", money_with_wings: "💸", moneybag: "💰", monkey: "🐒", monkey_face: "🐵", moon: "🌔", mortar_board: "🎓",
  mountain: "⛰️", mouse: "🐭", movie_camera: "🎥", muscle: "💪", mushroom: "🍄", musical_note: "🎵", nail_care: "💅",
  nerd_face: "🤓", new: "🆕", newspaper: "📰", no_entry: "⛔", no_entry_sign: "🚫", notebook: "📓", notes: "🎶", nut_and_bolt: "🔩",
  ocean: "🌊", octopus: "🐙", ok: "🆗", ok_hand: "👌", open_file_folder: "📂", orange_book: "📙", orange_heart: "🧡", outbox_tray: "📤",
  owl: "🦉", ox: "🐂", package: "📦", page_facing_up: "📄", page_with_curl: "📃", palm_tree: "🌴", panda_face: "🐼", paperclip: "📎",
  parachute: "🪂", parrot: "🦜", partying_face: "🥳", pause_button: "⏸️", peach: "🍑", peacock: "🦚", pear: "🍐", pen: "🖊️",
  pencil: "📝", pencil2: "✏️", penguin: "🐧", pepper: "🌶️", petri_dish: "🧫", phone: "☎️", pick: "⛏️", pig: "🐷", pill: "💊",
  pineapple: "🍍", pizza: "🍕", point_down: "👇", point_left: "👈", point_right: "👉", point_up: "☝️", police_car: "🚓",
  poodle: "🐩", poop: "💩", popcorn: "🍿", postbox: "📮", potato: "🥔", pray: "🙏", pretzel: "🥨", purple_heart: "💜",
  pushpin: "📌", question: "❓", rabbit: "🐰", racing_car: "🏎️", radioactive: "☢️", rage: "😡", railway_car: "🚃", rainbow: "🌈",
  raised_hands: "🙌", ram: "🐏", recycle: "♻️", red_circle: "🔴", registered: "®️", relaxed: "☺️", relieved: "😌",
  repeat: "🔁", rewind: "⏪", rhinoceros: "🦏", ribbon: "🎀", rice: "🍚", robot: "🤖", rocket: "🚀", rofl: "🤣", rooster: "🐓",
  rose: "🌹", rotating_light: "🚨", round_pushpin: "📍", runner: "🏃", running: "🏃", sailboat: "⛵", satellite: "📡",
  sauropod: "🦕", scissors: "✂️", scorpion: "🦂", scream: "😱", scroll: "📜", seedling: "🌱", see_no_evil: "🙈", shark: "🦈",
  sheep: "🐑", shell: "🐚", shield: "🛡️", ship: "🚢", shipit: "🐿️", shrug: "🤷", skull: "💀", skull_and_crossbones: "☠️",
  sleeping: "😴", slightly_smiling_face: "🙂", sloth: "🦥", smile: "😄", smiley: "😃", smirk: "😏", snail: "🐌", snake: "🐍",
  snowflake: "❄️", snowman: "⛄", soap: "🧼", sob: "😭", soccer: "⚽", sos: "🆘", sparkle: "❇️", sparkler: "🎇", sparkles: "✨",
  speech_balloon: "💬", spider: "🕷️", spider_web: "🕸️", spiral_notepad: "🗒️", squid: "🦑", star: "⭐", star2: "🌟",
  stars: "🌠", stethoscope: "🩺", stop_button: "⏹️", stop_sign: "🛑", stopwatch: "⏱️", straight_ruler: "📏", strawberry: "🍓",
  sun_with_face: "🌞", sunflower: "🌻", sunglasses: "😎", sunny: "☀️", sunrise: "🌅", sushi: "🍣", swan: "🦢", sweat: "😓",
  sweat_drops: "💦", sweat_smile: "😅", syringe: "💉", taco: "🌮", tada: "🎉", technologist: "🧑‍💻", telescope: "🔭",
  tent: "⛺", test_tube: "🧪", thermometer: "🌡️", thinking: "🤔", thought_balloon: "💭", thumbsdown: "👎", thumbsup: "👍",
  tiger: "🐯", timer_clock: "⏲️", tm: "™️", toolbox: "🧰", tomato: "🍅", tornado: "🌪️", tractor: "🚜", traffic_light: "🚥",
  train: "🚋", tree: "🌳", triangular_flag_on_post: "🚩", triangular_ruler: "📐", trident: "🔱", trophy: "🏆", truck: "🚚",
  tulip: "🌷", turtle: "🐢", tv: "📺", twisted_rightwards_arrows: "🔀", umbrella: "☂️", unamused: "😒", unicorn: "🦄",
  unlock: "🔓", up: "🆙", upside_down_face: "🙃", v: "✌️", vertical_traffic_light: "🚦", video_game: "🎮", volcano: "🌋",
  warning: "⚠️", wastebasket: "🗑️", watch: "⌚", watermelon: "🍉", wave: "👋", whale: "🐳", whale2: "🐋", wheel_of_dharma: "☸️",
  white_check_mark: "✅", white_circle: "⚪", white_flag: "🏳️", wilted_flower: "🥀", wink: "😉", wolf: "🐺", worried: "😟",
  wrench: "🔧", x: "❌", yellow_circle: "🟡", yellow_heart: "💛", yum: "😋", zap: "⚡", zebra: "🦓", zipper_mouth_face: "🤐",
  zzz: "💤",
};

const SHORTCODE = /:([a-z0-9_+-]+):/g;

// emojify replaces the shortcodes in text that the table knows. A colon
// that closes a name the table lacks may open the next one (":x:y:z:").
export function emojify(text) {
  if (!text.includes(":")) return text;
  let out = "";
  let pos = 0;
  SHORTCODE.lastIndex = 0;
  for (let m; (m = SHORTCODE.exec(text)); ) {
    const e = Object.hasOwn(EMOJI, m[1]) ? EMOJI[m[1]] : undefined;
    if (e === undefined) {
      SHORTCODE.lastIndex = m.index + m[0].length - 1;
      continue;
    }
    out += text.slice(pos, m.index) + e;
    pos = m.index + m[0].length;
  }
  return out + text.slice(pos);
}
