#ifndef ASYNCRL_ENVS_BOX2D_CONTACTS_H_
#define ASYNCRL_ENVS_BOX2D_CONTACTS_H_

#include <box2d/box2d.h>

#include <utility>
#include <vector>

namespace asyncrl {

// Gymnasium's ContactDetector, as both Box2D tasks use it: the hull
// touching anything (only the ground can) ends the game; each watched
// body's flag follows its contacts. As there, a leg leaving one terrain
// edge clears its flag even when it still touches the next one.
//
// The bodies are read through the environment's own pointers at every
// contact: the environment builds a new world, and new bodies, each reset.
class ContactFlags final : public b2ContactListener {
 public:
  ContactFlags(b2Body* const* hull, bool* game_over)
      : hull_(hull), game_over_(game_over) {}

  // `*touching` follows `*body`'s contacts.
  void Watch(b2Body* const* body, bool* touching) {
    watched_.emplace_back(body, touching);
  }

  void BeginContact(b2Contact* contact) override {
    if (Involves(contact, *hull_)) *game_over_ = true;
    for (const auto& [body, touching] : watched_) {
      if (Involves(contact, *body)) *touching = true;
    }
  }

  void EndContact(b2Contact* contact) override {
    for (const auto& [body, touching] : watched_) {
      if (Involves(contact, *body)) *touching = false;
    }
  }

 private:
  static bool Involves(b2Contact* contact, const b2Body* body) {
    return contact->GetFixtureA()->GetBody() == body ||
           contact->GetFixtureB()->GetBody() == body;
  }

  b2Body* const* hull_;
  bool* game_over_;
  std::vector<std::pair<b2Body* const*, bool*>> watched_;
};

}  // namespace asyncrl

#endif  // ASYNCRL_ENVS_BOX2D_CONTACTS_H_
